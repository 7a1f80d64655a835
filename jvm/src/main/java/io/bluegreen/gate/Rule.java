package io.bluegreen.gate;

import java.io.Serializable;

/**
 * A gate's whole rule for one state and one color: records with event time {@code > w} get
 * {@link #above()}, those in {@code (lo, w]} get {@link #atOrBelow()}, those {@code <= lo} get
 * {@code below}. The floor F, when there is one, is a band {@code t <= F} dropped by both colors
 * (and counted as late). Computed once per state update so that a record costs one comparison in
 * the common cases (a uniform rule, and every record above W). Immutable.
 */
public final class Rule implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The rule of a gate that has no valid state (yet): hold everything. */
    public static final Rule HOLD = uniform(Decision.HOLD);

    private final long w;
    private final Decision atOrBelow;
    private final Decision above;
    private final long lo;
    private final Decision below;
    private final boolean hasFloor;
    private final long floor;

    private Rule(long w, Decision atOrBelow, Decision above, long lo, Decision below, boolean hasFloor, long floor) {
        this.w = w;
        this.atOrBelow = atOrBelow;
        this.above = above;
        this.lo = lo;
        this.below = below;
        this.hasFloor = hasFloor;
        this.floor = floor;
    }

    /** A rule that splits at {@code w}. */
    public static Rule split(long w, Decision atOrBelow, Decision above) {
        return new Rule(w, atOrBelow, above, Long.MIN_VALUE, atOrBelow, false, 0);
    }

    /**
     * A rule that gives every record the same decision. Its split point is {@code Long.MIN_VALUE},
     * so that every record but one takes the first comparison of {@link #decide}.
     */
    public static Rule uniform(Decision d) {
        return split(Long.MIN_VALUE, d, d);
    }

    /** This rule with floor {@code f} ({@code f < w} unless the rule is uniform): {@code t <= f} is dropped. */
    Rule withFloor(long f) {
        if (atOrBelow == above) { // uniform: one comparison with the floor
            return new Rule(f, Decision.DROP, above, Long.MIN_VALUE, Decision.DROP, true, f);
        }
        return new Rule(w, atOrBelow, above, f, Decision.DROP, true, f);
    }

    /** The split point: records above it get {@link #above()}. */
    public long w() {
        return w;
    }

    public Decision atOrBelow() {
        return atOrBelow;
    }

    public Decision above() {
        return above;
    }

    /** The decision for one record. */
    public Decision decide(long eventTimeMs) {
        return eventTimeMs > w ? above : eventTimeMs > lo ? atOrBelow : below;
    }

    /** Whether {@code eventTimeMs} is at or below the floor (a late record, dropped by both colors). */
    public boolean isLate(long eventTimeMs) {
        return hasFloor && eventTimeMs <= floor;
    }

    /**
     * The rule of color {@code color} under {@code state}. Invalid combinations give {@link #HOLD};
     * {@code state == null} (no valid state known) gives {@link #HOLD}.
     */
    public static Rule forState(CoordinationState state, Color color) {
        if (state == null || !state.isValid()) {
            return HOLD;
        }
        Rule r = withoutFloor(state, color);
        return state.hasFloor() ? r.withFloor(state.floor()) : r;
    }

    private static Rule withoutFloor(CoordinationState state, Color color) {
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
        if (!(o instanceof Rule)) {
            return false;
        }
        Rule r = (Rule) o;
        return r.w == w && r.atOrBelow == atOrBelow && r.above == above && r.lo == lo && r.below == below
                && r.hasFloor == hasFloor && r.floor == floor;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(w) * 31 + atOrBelow.hashCode() * 7 + above.hashCode() + Long.hashCode(lo) * 17 + Long.hashCode(floor);
    }

    @Override
    public String toString() {
        String f = hasFloor ? ", floor " + floor + ": DROP" : "";
        return atOrBelow == above && !hasFloor ? "Rule(" + atOrBelow + ")"
                : "Rule(t<=" + w + ": " + atOrBelow + ", t>" + w + ": " + above + f + ")";
    }
}
