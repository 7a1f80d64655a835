package io.bluegreen.gate;

import java.util.Map;
import java.util.TreeMap;

/** Delivers one fixed ConfigMap once, at subscription (tests, pinned deployments). */
public final class StaticStateSource implements StateSource {
    private static final long serialVersionUID = 1L;

    private final TreeMap<String, String> data;

    /** A source of the raw ConfigMap data {@code data} (parsed by the gate). */
    public StaticStateSource(Map<String, String> data) {
        this.data = new TreeMap<>(data);
    }

    /** A source of {@code state}. */
    public static StaticStateSource of(CoordinationState state) {
        return new StaticStateSource(state.toData());
    }

    @Override
    public Subscription subscribe(String gateName, StateListener listener) {
        listener.onConfigMap(new TreeMap<>(data));
        return () -> {};
    }
}
