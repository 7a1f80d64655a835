package io.bluegreen.gate;

/** Where the blue/green deployment is in its life (key {@code stage}). */
public enum Stage {
    INITIALIZING,
    RUNNING,
    TRANSITIONING,
    CLEAR_TO_TEARDOWN,
    FAILING;

    /** The spellings accepted on the wire, for error messages. */
    public static final String EXPECTED =
            "one of INITIALIZING, RUNNING, TRANSITIONING, CLEAR_TO_TEARDOWN, FAILING";

    /** The wire spelling. */
    public String wire() {
        return name();
    }

    /** Exact, case-sensitive parse; {@code null} when {@code s} is not a spelling. */
    public static Stage fromWire(String s) {
        for (Stage v : values()) {
            if (v.name().equals(s)) {
                return v;
            }
        }
        return null;
    }
}
