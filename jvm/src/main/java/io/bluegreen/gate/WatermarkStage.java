package io.bluegreen.gate;

/** How settled the watermark toggle value W is (key {@code watermark-stage}). */
public enum WatermarkStage {
    /** No W. Gauge value 0. */
    WATERMARK_NOT_SET,
    /** W proposed, may still rise. Gauge value 1. */
    WAITING_FOR_WATERMARK,
    /** W final for the epoch. Gauge value 2. */
    WATERMARK_SET;

    /** The spellings accepted on the wire, for error messages. */
    public static final String EXPECTED =
            "one of WATERMARK_NOT_SET, WAITING_FOR_WATERMARK, WATERMARK_SET";

    /** The wire spelling. */
    public String wire() {
        return name();
    }

    /** Exact, case-sensitive parse; {@code null} when {@code s} is not a spelling. */
    public static WatermarkStage fromWire(String s) {
        for (WatermarkStage v : values()) {
            if (v.name().equals(s)) {
                return v;
            }
        }
        return null;
    }
}
