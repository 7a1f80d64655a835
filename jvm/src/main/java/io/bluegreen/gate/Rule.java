package io.bluegreen.gate;

import java.io.Serializable;

/**
 * A gate's whole rule for one state and one color: records with event time {@code <= w} get
 * {@link #atOrBelow()}, the others {@link #above()}. Computed once per state update so that each
 * record costs one comparison. Immutable.
 */
public final class Rule implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The rule of a gate that has no valid state (yet): hold everything. */
    public static final Rule HOLD = uniform(Decision.HOLD);

    private final long w;
    private final Decision atOrBelow;
    private final Decision above;

    private Rule(long w, Decision atOrBelow, Decision above) {
        this.w = w;
        this.atOrBelow = atOrBelow;
        this.above = above;
    }

    /** A rule that splits at {@code w}. */
    public static Rule split(long w, Decision atOrBelow, Decision above) {
        return new Rule(w, atOrBelow, above);
    }

    /** A rule that gives every record the same decision ({@code w = Long.MAX_VALUE}). */
    public static Rule uniform(Decision d) {
        return new Rule(Long.MAX_VALUE, d, d);
    }

    /** The split point. */
    public long w() {
        return w;
    }

    public Decision atOrBelow() {
        return atOrBelow;
    }

    public Decision above() {
        return above;
    }

    /** The decision for one record: one comparison. */
    public Decision decide(long eventTimeMs) {
        return eventTimeMs <= w ? atOrBelow : above;
    }

    /**
     * The rule of color {@code color} under {@code state}. Invalid combinations give {@link #HOLD};
     * {@code state == null} (no valid state known) gives {@link #HOLD}.
     */
    public static Rule forState(CoordinationState state, Color color) {
        if (state == null || !state.isValid()) {
            return HOLD;
        }
        boolean incoming = color == state.active();
        long w = state.watermarkToggleValue();
        switch (state.stage()) {
            case INITIALIZING:
            case RUNNING:
                return uniform(incoming ? Decision.PASS : Decision.DROP);
            case TRANSITIONING:
                switch (state.watermarkStage()) {
                    case WATERMARK_NOT_SET:
                        return uniform(incoming ? Decision.HOLD : Decision.PASS);
                    case WAITING_FOR_WATERMARK:
                        return incoming ? uniform(Decision.HOLD) : split(w, Decision.PASS, Decision.HOLD);
                    default:
                        return incoming
                                ? split(w, Decision.DROP, Decision.PASS)
                                : split(w, Decision.PASS, Decision.DROP);
                }
            case CLEAR_TO_TEARDOWN:
                return incoming ? split(w, Decision.DROP, Decision.PASS) : split(w, Decision.PASS, Decision.DROP);
            case FAILING:
                return uniform(incoming ? Decision.DROP : Decision.PASS);
            default:
                throw new AssertionError(state.stage());
        }
    }

    /** The gate rule in one call: {@code forState(state, color).decide(eventTimeMs)}. */
    public static Decision decide(CoordinationState state, Color color, long eventTimeMs) {
        return forState(state, color).decide(eventTimeMs);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Rule && ((Rule) o).w == w && ((Rule) o).atOrBelow == atOrBelow && ((Rule) o).above == above;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(w) * 31 + atOrBelow.hashCode() * 7 + above.hashCode();
    }

    @Override
    public String toString() {
        return atOrBelow == above ? "Rule(" + atOrBelow + ")" : "Rule(t<=" + w + ": " + atOrBelow + ", t>" + w + ": " + above + ")";
    }
}
