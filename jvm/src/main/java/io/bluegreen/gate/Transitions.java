package io.bluegreen.gate;

import static io.bluegreen.gate.Stage.CLEAR_TO_TEARDOWN;
import static io.bluegreen.gate.Stage.FAILING;
import static io.bluegreen.gate.Stage.INITIALIZING;
import static io.bluegreen.gate.Stage.RUNNING;
import static io.bluegreen.gate.Stage.TRANSITIONING;
import static io.bluegreen.gate.WatermarkStage.WAITING_FOR_WATERMARK;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_NOT_SET;
import static io.bluegreen.gate.WatermarkStage.WATERMARK_SET;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

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
            if (prev.stage() != RUNNING) {
                return false;
            }
            // Step 9 carries the floor into the next handover; step 10 clears it.
            return (next.stage() == TRANSITIONING
                            && next.watermarkStage() == WATERMARK_NOT_SET
                            && next.active() == prev.active().other()
                            && next.sameFloor(prev))
                    || (next.stage() == RUNNING && sameColor && !next.hasFloor());
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
        if (ps == CLEAR_TO_TEARDOWN && ns == RUNNING) {
            return sameColor && next.hasFloor() && next.floor() == w; // step 6: W becomes the floor
        }
        if (!next.sameFloor(prev)) {
            return false;
        }
        if (ps == ns && pt == nt && w == w2) {
            return sameColor;
        }
        if ((ps == INITIALIZING && ns == RUNNING)
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
                    ? runningFloor(prev, next)
                    : "INITIALIZING can only become RUNNING with the same active color";
        }
        if (ps == FAILING) {
            return next.stage() == RUNNING && next.active() == prev.active().other()
                    ? runningFloor(prev, next)
                    : "FAILING can only become RUNNING with the outgoing color active again";
        }
        if ((ps == TRANSITIONING || ps == CLEAR_TO_TEARDOWN) && next.stage() == RUNNING) {
            return sameColor || toggleAllowsAbort(prev)
                    ? runningFloor(prev, next)
                    : "after WATERMARK_SET the incoming color stays active";
        }
        if (!prev.sameFloor(next)) {
            return "the floor may not change within an epoch (only RUNNING after a handover sets it to W)";
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

    private static String runningFloor(CoordinationState prev, CoordinationState next) {
        return Ends.of(prev).contains(next.active(), next.floorOrNull())
                ? null
                : "RUNNING's floor must be the W of the handover it completes, or the floor before an abort";
    }

    private static String acrossEpochs(CoordinationState prev, CoordinationState next) {
        if (next.stage() == INITIALIZING) {
            return "INITIALIZING only starts a deployment's first epoch";
        }
        // The RUNNING states reachable at the end of each epoch up to next's (or the one before).
        long steps = next.epoch() - prev.epoch() - (next.stage() == RUNNING ? 0 : 1);
        Ends ends = Ends.of(prev);
        for (long i = 0; Long.compareUnsigned(i, steps) < 0 && !ends.saturated(); i++) {
            ends = ends.nextEpoch();
        }
        if (next.stage() == RUNNING) {
            return ends.contains(next.active(), next.floorOrNull())
                    ? null
                    : "no sequence of handovers ends in this color with this floor";
        }
        Color left = next.active().other();
        if (!ends.hasColor(left)) {
            return "the new epoch's incoming color must differ from the color left running by the previous epoch";
        }
        return ends.contains(left, next.floorOrNull())
                ? null
                : "a new epoch's handover carries the floor of the RUNNING state it starts from";
    }

    /**
     * The RUNNING states (color, floor) reachable at the end of an epoch: per color, whether "no
     * floor" is reachable, some single floors, and every floor {@code >= atLeast}.
     */
    private static final class Ends {
        final boolean[] none = new boolean[2];
        final List<Set<Long>> points = List.of(new HashSet<>(), new HashSet<>());
        final boolean[] hasRange = new boolean[2];
        final long[] atLeast = new long[2];

        /** The RUNNING states that end {@code s}'s epoch. */
        static Ends of(CoordinationState s) {
            Ends e = new Ends();
            Color x = s.active();
            Long f = s.floorOrNull();
            switch (s.stage()) {
                case INITIALIZING:
                case RUNNING:
                    e.add(x, f);
                    break;
                case FAILING:
                    e.add(x.other(), f);
                    break;
                case CLEAR_TO_TEARDOWN:
                    e.add(x, s.watermarkToggleValue());
                    break;
                default: // TRANSITIONING
                    switch (s.watermarkStage()) {
                        case WATERMARK_SET:
                            e.add(x, s.watermarkToggleValue());
                            break;
                        case WAITING_FOR_WATERMARK:
                            e.addRange(x, s.watermarkToggleValue());
                            e.add(x.other(), f);
                            break;
                        default:
                            e.addAbove(x, f);
                            e.add(x.other(), f);
                    }
            }
            return e;
        }

        /** The next epoch: step 10 (floor cleared), or step 9 then an abort (floor kept) or a completion (W above it). */
        Ends nextEpoch() {
            Ends n = new Ends();
            for (Color c : Color.values()) {
                int i = c.ordinal();
                if (!none[i] && points.get(i).isEmpty() && !hasRange[i]) {
                    continue;
                }
                n.none[c.ordinal()] = true;
                if (none[i]) {
                    n.addAbove(c.other(), null);
                }
                for (long p : points.get(i)) {
                    n.add(c, p);
                    n.addAbove(c.other(), p);
                }
                if (hasRange[i]) {
                    n.addRange(c, atLeast[i]);
                    n.addAbove(c.other(), atLeast[i]);
                }
            }
            return n;
        }

        boolean saturated() {
            return none[0] && none[1] && hasRange[0] && hasRange[1] && atLeast[0] == Long.MIN_VALUE && atLeast[1] == Long.MIN_VALUE;
        }

        boolean hasColor(Color c) {
            int i = c.ordinal();
            return none[i] || !points.get(i).isEmpty() || hasRange[i];
        }

        boolean contains(Color c, Long floor) {
            int i = c.ordinal();
            if (floor == null) {
                return none[i];
            }
            return points.get(i).contains(floor) || (hasRange[i] && floor >= atLeast[i]);
        }

        void add(Color c, Long floor) {
            if (floor == null) {
                none[c.ordinal()] = true;
            } else {
                points.get(c.ordinal()).add(floor);
            }
        }

        /** Every floor W a completed handover can set above floor {@code f} (any W without one). */
        void addAbove(Color c, Long f) {
            if (f == null) {
                addRange(c, Long.MIN_VALUE);
            } else if (f != Long.MAX_VALUE) {
                addRange(c, f + 1);
            }
        }

        void addRange(Color c, long from) {
            int i = c.ordinal();
            atLeast[i] = hasRange[i] ? Math.min(atLeast[i], from) : from;
            hasRange[i] = true;
        }
    }

    private static boolean toggleAllowsAbort(CoordinationState s) {
        return s.stage() == TRANSITIONING && s.watermarkStage() != WATERMARK_SET;
    }
}
