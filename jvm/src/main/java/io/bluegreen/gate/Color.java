package io.bluegreen.gate;

/** One of the two deployments (key {@code active-deployment-type}); spelled exactly as on the wire. */
public enum Color {
    BLUE,
    GREEN;

    /** The spellings accepted on the wire, for error messages. */
    public static final String EXPECTED = "one of BLUE, GREEN";

    /** The other color. */
    public Color other() {
        return this == BLUE ? GREEN : BLUE;
    }

    /** The wire spelling. */
    public String wire() {
        return name();
    }

    /** Exact, case-sensitive parse; {@code null} when {@code s} is not a spelling. */
    public static Color fromWire(String s) {
        for (Color c : values()) {
            if (c.name().equals(s)) {
                return c;
            }
        }
        return null;
    }
}
