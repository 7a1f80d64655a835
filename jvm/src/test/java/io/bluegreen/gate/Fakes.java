package io.bluegreen.gate;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/** Hand-made stand-ins for Flink's runtime objects (the test harness jar is not in the distribution). */
final class Fakes {
    private Fakes() {}

    /** A metric group that records what is registered. */
    static final class Metrics {
        final Map<String, Metric> registered = new ConcurrentHashMap<>();
        final MetricGroup group;

        Metrics() {
            group = (MetricGroup) Proxy.newProxyInstance(Fakes.class.getClassLoader(), new Class<?>[] {MetricGroup.class},
                    (proxy, m, args) -> {
                        switch (m.getName()) {
                            case "counter":
                                Counter c = args.length == 2 ? (Counter) args[1] : new SimpleCounter();
                                registered.put(String.valueOf(args[0]), c);
                                return c;
                            case "gauge":
                            case "histogram":
                            case "meter":
                                registered.put(String.valueOf(args[0]), (Metric) args[1]);
                                return args[1];
                            case "addGroup":
                                return proxy;
                            case "getScopeComponents":
                                return new String[0];
                            case "getAllVariables":
                                return Map.of();
                            case "getMetricIdentifier":
                                return String.valueOf(args[0]);
                            case "hashCode":
                                return System.identityHashCode(proxy);
                            case "equals":
                                return proxy == args[0];
                            case "toString":
                                return "FakeMetricGroup";
                            default:
                                return null;
                        }
                    });
        }

        long count(String name) {
            return ((Counter) registered.get(name)).getCount();
        }

        Object gauge(String name) {
            return ((Gauge<?>) registered.get(name)).getValue();
        }
    }

    /** A list state backed by a list. */
    @SuppressWarnings("unchecked")
    static <T> ListState<T> listState(List<T> backing) {
        return (ListState<T>) Proxy.newProxyInstance(Fakes.class.getClassLoader(), new Class<?>[] {ListState.class},
                (proxy, m, args) -> {
                    switch (m.getName()) {
                        case "get": return new ArrayList<>(backing);
                        case "add": backing.add((T) args[0]); return null;
                        case "addAll": backing.addAll((List<T>) args[0]); return null;
                        case "update": backing.clear(); backing.addAll((List<T>) args[0]); return null;
                        case "clear": backing.clear(); return null;
                        default: throw new UnsupportedOperationException(m.getName());
                    }
                });
    }

    /** An initialization context whose operator state store serves one union list state. */
    static FunctionInitializationContext initContext(boolean restored, List<Long> union) {
        OperatorStateStore store = (OperatorStateStore) Proxy.newProxyInstance(Fakes.class.getClassLoader(),
                new Class<?>[] {OperatorStateStore.class}, (proxy, m, args) -> {
                    if (m.getName().equals("getUnionListState")) {
                        return listState(union);
                    }
                    throw new UnsupportedOperationException(m.getName());
                });
        return (FunctionInitializationContext) Proxy.newProxyInstance(Fakes.class.getClassLoader(),
                new Class<?>[] {FunctionInitializationContext.class}, (proxy, m, args) -> {
                    switch (m.getName()) {
                        case "isRestored": return restored;
                        case "getOperatorStateStore": return store;
                        case "getRestoredCheckpointId": return restored ? java.util.OptionalLong.of(1) : java.util.OptionalLong.empty();
                        default: throw new UnsupportedOperationException(m.getName());
                    }
                });
    }

    static FunctionSnapshotContext snapshotContext(long checkpointId) {
        return (FunctionSnapshotContext) Proxy.newProxyInstance(Fakes.class.getClassLoader(),
                new Class<?>[] {FunctionSnapshotContext.class}, (proxy, m, args) -> {
                    switch (m.getName()) {
                        case "getCheckpointId": return checkpointId;
                        case "getCheckpointTimestamp": return 0L;
                        default: throw new UnsupportedOperationException(m.getName());
                    }
                });
    }

    /** A ProcessFunction context carrying one timestamp (null: none). */
    static <T> ProcessFunction<T, T>.Context context(ProcessFunction<T, T> fn, Long ts) {
        return fn.new Context() {
            @Override
            public Long timestamp() {
                return ts;
            }

            @Override
            public org.apache.flink.streaming.api.TimerService timerService() {
                throw new UnsupportedOperationException();
            }

            @Override
            public <X> void output(org.apache.flink.util.OutputTag<X> outputTag, X value) {
                throw new UnsupportedOperationException();
            }
        };
    }

    /** A collector into a list. */
    static final class Out<T> implements Collector<T> {
        final List<T> items = new ArrayList<>();

        @Override
        public void collect(T record) {
            items.add(record);
        }

        @Override
        public void close() {}
    }
}
