package io.bluegreen.examples;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The running count of each key, in keyed state ({@code ValueState<Long> "count"}, operator uid
 * {@code running-count}). The same layout in v1 and v2, so either version restores the other's
 * savepoint.
 */
final class RunningCount extends KeyedProcessFunction<Long, Event, Event> {
    private static final long serialVersionUID = 1L;

    private transient ValueState<Long> count;

    @Override
    public void open(OpenContext openContext) {
        count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
    }

    @Override
    public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
        Long c = count.value();
        long next = (c == null ? 0 : c) + 1;
        count.update(next);
        e.count = next;
        out.collect(e);
    }
}
