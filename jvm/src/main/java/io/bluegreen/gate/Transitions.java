package io.bluegreen.gate;

import static io.bluegreen.gate.Stage.CLEAR_TO_TEARDOWN;
import static io.bluegreen.gate.Stage.FAILING;
import static io.bluegreen.gate.Stage.INITIALIZING;
import static io.bluegreen.gate.Stage.RUNNING;
import static io.bluegreen.gate.Stage.TRANSITIONING;
import static io.bluegreen.gate.WatermarkStage.WAITING_FOR_WATERMARK;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_NOT_SET;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_SET;

/**
 * The legal evolutions of the coordination state; the Java twin of the Rust
 * {@code check_transition} / {@code is_step}. A gate may miss states, so {@link #check} accepts
 * every state reachable from the current one by legal steps and refuses the rest.
 */
public final class Transitions {
    private Transitions() {}

    /**
     * Whether {@code next} may follow {@code prev}: returns when some sequence of zero or more
     * legal controller steps leads from {@code prev} to {@code next}; throws otherwise
     * ({@code Inconsistent}, {@code StaleEpoch} or {@code IllegalTransition}).
     */
    public static void check(CoordinationState prev, CoordinationState next) throws ProtocolException {
        prev.validate();
        next.validate();
        int cmp = Long.compareUnsigned(next.epoch(), prev.epoch());
        if (cmp < 0) {
            throw ProtocolException.staleEpoch(prev.epoch(), next.epoch());
        }
        String reason = cmp == 0 ? withinEpoch(prev, next) : acrossEpochs(prev, next);
        if (reason != null) {
            throw ProtocolException.illegalTransition(next.epoch(), prev.toString(), next.toString(), reason);
        }
    }

    /** {@link #check} as a boolean. */
    public static boolean isReachable(CoordinationState prev, CoordinationState next) {
        try {
            check(prev, next);
            return true;
        } catch (ProtocolException e) {
            return false;
        }
    }

    /** One legal controller step (an edge of the state machine). A deletion-delay change alone is a step. */
    public static boolean isStep(CoordinationState prev, CoordinationState next) {
        if (!prev.isValid() || !next.isValid()) {
            return false;
        }
        boolean sameColor = prev.active() == next.active();
        if (next.epoch() == prev.epoch() + 1) {
            return prev.stage() == RUNNING
                    && next.stage() == TRANSITIONING
                    && next.watermarkStage() == WATERMARK_NOT_SET
                    && next.active() == prev.active().other();
        }
        if (next.epoch() != prev.epoch()) {
            return false;
        }
        Stage ps = prev.stage();
        Stage ns = next.stage();
        WatermarkStage pt = prev.watermarkStage();
        WatermarkStage nt = next.watermarkStage();
        long w = prev.watermarkToggleValue();
        long w2 = next.watermarkToggleValue();
        if (ps == ns && pt == nt && w == w2) {
            return sameColor;
        }
        if (((ps == INITIALIZING || ps == CLEAR_TO_TEARDOWN) && ns == RUNNING)
                || (ps == TRANSITIONING && pt == WATERMARK_NOT_SET && ns == TRANSITIONING && nt == WAITING_FOR_WATERMARK)) {
            return sameColor;
        }
        if ((ps == TRANSITIONING && pt == WATERMARK_SET && ns == CLEAR_TO_TEARDOWN && nt == WATERMARK_SET)
                || (ps == TRANSITIONING && pt == WAITING_FOR_WATERMARK && ns == TRANSITIONING && nt == WATERMARK_SET)) {
            return sameColor && w2 == w;
        }
        if (ps == TRANSITIONING && pt == WAITING_FOR_WATERMARK && ns == TRANSITIONING && nt == WAITING_FOR_WATERMARK) {
            return sameColor && w2 > w;
        }
        if (ps == TRANSITIONING && ns == FAILING) {
            return sameColor && pt == nt && w == w2;
        }
        if (ps == FAILING && ns == RUNNING) {
            return next.active() == prev.active().other();
        }
        return false;
    }

    private static String withinEpoch(CoordinationState prev, CoordinationState next) {
        boolean sameColor = prev.active() == next.active();
        if (prev.samePhase(next)) {
            return null;
        }
        if (next.stage() == INITIALIZING) {
            return "INITIALIZING only starts a deployment's first epoch";
        }
        if (prev.stage() == RUNNING) {
            return "RUNNING ends an epoch; a new transition must increase the epoch";
        }
        Stage ps = prev.stage();
        if (ps == INITIALIZING) {
            return next.stage() == RUNNING && sameColor
                    ? null
                    : "INITIALIZING can only become RUNNING with the same active color";
        }
        if (ps == FAILING) {
            return next.stage() == RUNNING && next.active() == prev.active().other()
                    ? null
                    : "FAILING can only become RUNNING with the outgoing color active again";
        }
        if ((ps == TRANSITIONING || ps == CLEAR_TO_TEARDOWN) && next.stage() == RUNNING) {
            return sameColor || toggleAllowsAbort(prev)
                    ? null
                    : "after WATERMARK_SET the incoming color stays active";
        }
        if (!sameColor) {
            return "the active color may not change within a transition";
        }
        long w = prev.watermarkToggleValue();
        long w2 = next.watermarkToggleValue();
        Stage ns = next.stage();
        WatermarkStage nt = next.watermarkStage();
        if (ps == TRANSITIONING) {
            switch (prev.watermarkStage()) {
                case WATERMARK_NOT_SET:
                    return null;
                case WAITING_FOR_WATERMARK:
                    if (((ns == TRANSITIONING || ns == FAILING) && nt == WAITING_FOR_WATERMARK && w2 >= w)
                            || ((ns == TRANSITIONING || ns == CLEAR_TO_TEARDOWN) && nt == WATERMARK_SET && w2 >= w)) {
                        return null;
                    }
                    if (nt == WATERMARK_NOT_SET) {
                        return "a proposed watermark toggle value cannot be withdrawn";
                    }
                    return "the watermark toggle value may only rise before it is set";
                default:
                    if (ns == CLEAR_TO_TEARDOWN && nt == WATERMARK_SET && w2 == w) {
                        return null;
                    }
                    if (ns == FAILING) {
                        return "FAILING is only reachable before the toggle is set";
                    }
                    return "the watermark toggle value may not change once set";
            }
        }
        if (ps == CLEAR_TO_TEARDOWN) {
            return "CLEAR_TO_TEARDOWN can only become RUNNING with the same active color";
        }
        return "not reachable by legal steps";
    }

    private static String acrossEpochs(CoordinationState prev, CoordinationState next) {
        if (next.stage() == INITIALIZING) {
            return "INITIALIZING only starts a deployment's first epoch";
        }
        if (next.stage() == RUNNING || Long.compareUnsigned(next.epoch() - prev.epoch(), 2) >= 0) {
            return null;
        }
        Color needed = next.active().other();
        boolean ok;
        if (prev.stage() == FAILING) {
            ok = prev.active().other() == needed;
        } else if (toggleAllowsAbort(prev)) {
            ok = true;
        } else {
            ok = prev.active() == needed;
        }
        return ok ? null : "the new epoch's incoming color must differ from the color left running by the previous epoch";
    }

    private static boolean toggleAllowsAbort(CoordinationState s) {
        return s.stage() == TRANSITIONING && s.watermarkStage() != WATERMARK_SET;
    }
}
