package io.bluegreen.gate;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * States pushed in-process (tests, embedding programs, a local controller in the same JVM). The
 * source is serialized into the job graph, so instances are linked through a JVM-wide named
 * channel: {@code ManualStateSource.channel("blue").publish(state)} reaches every gate subscribed
 * to a {@code new ManualStateSource("blue")} in this JVM (e.g. a Flink MiniCluster), and a gate
 * that subscribes later first receives the latest published data.
 */
public final class ManualStateSource implements StateSource {
    private static final long serialVersionUID = 1L;
    private static final Map<String, Channel> CHANNELS = new ConcurrentHashMap<>();

    private final String channel;

    public ManualStateSource(String channel) {
        this.channel = channel;
    }

    /** The channel named {@code name} (created on first use). */
    public static Channel channel(String name) {
        return CHANNELS.computeIfAbsent(name, n -> new Channel());
    }

    /** Forgets the channel named {@code name} (its subscribers stay subscribed to the old one). */
    public static void reset(String name) {
        CHANNELS.remove(name);
    }

    @Override
    public Subscription subscribe(String gateName, StateListener listener) {
        return channel(channel).add(listener);
    }

    /** A named in-process channel of ConfigMap data. */
    public static final class Channel {
        private final List<StateListener> listeners = new CopyOnWriteArrayList<>();
        private Map<String, String> latest;

        /** Delivers {@code state} to every subscribed gate. */
        public void publish(CoordinationState state) {
            publishData(state.toData());
        }

        /** Delivers raw ConfigMap data (it may be invalid: the gates parse it) to every subscribed gate. */
        public synchronized void publishData(Map<String, String> data) {
            latest = new TreeMap<>(data);
            for (StateListener l : listeners) {
                l.onConfigMap(new TreeMap<>(latest));
            }
        }

        /** The number of subscribed gates. */
        public int subscribers() {
            return listeners.size();
        }

        synchronized Subscription add(StateListener l) {
            listeners.add(l);
            if (latest != null) {
                l.onConfigMap(new TreeMap<>(latest));
            }
            return () -> listeners.remove(l);
        }
    }
}
