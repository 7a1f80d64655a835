package io.bluegreen.examples;

/** One record of the example topic (a Flink POJO), with the running count of its key once counted. */
public class Event {
    /** The source split. */
    public int split;
    /** The offset within the split. */
    public long offset;
    /** Event time, epoch ms. */
    public long eventTime;
    /** The key (split-local). */
    public long key;
    /** The running count of the key after this record; 0 before counting (and in the chained topology). */
    public long count;

    /** For Flink's POJO serializer. */
    public Event() {}

    /** A copy of this record with event time {@code t}. */
    Event withEventTime(long t) {
        Event e = new Event();
        e.split = split;
        e.offset = offset;
        e.eventTime = t;
        e.key = key;
        e.count = count;
        return e;
    }

    /**
     * The output line without its newline: {@code split,offset,eventTime,key,count,color,version,value}
     * where value is {@code count} for v1 and {@code 2 * count} for v2.
     */
    String line(String color, String version) {
        long value = "v2".equals(version) ? 2 * count : count;
        return split + "," + offset + "," + eventTime + "," + key + "," + count + "," + color + "," + version + "," + value;
    }
}
