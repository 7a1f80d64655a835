package io.bluegreen.gate;

/**
 * The line every gate subtask publishes in the gauge {@code bluegreenGateAppliedState}, the
 * controller's only acknowledgement: space-separated {@code key=value} pairs in this order, every
 * key always present, e.g.
 * {@code epoch=7 stage=TRANSITIONING active=GREEN watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false}.
 * Before any state is applied, epoch, stage, active, toggle and floor are empty and watermark-stage
 * is -1. Readers ignore unknown trailing keys. The Java twin of {@code bluegreen_protocol::GateReport}.
 */
public final class GateReport {
    static final String[] KEYS = {"epoch", "stage", "active", "watermark-stage", "toggle", "floor", "max-passed", "watermark", "idle"};

    /** The applied state's parts; null (and watermark-stage -1) before any state. */
    public final Long epoch;
    public final Stage stage;
    public final Color active;
    /** 0 NOT_SET, 1 WAITING, 2 SET; -1 before any state. */
    public final int watermarkStage;
    public final Long toggle;
    public final Long floor;
    /** The highest event time passed, restored state included; {@code Long.MIN_VALUE} if none. */
    public final long maxPassed;
    /** The gate's input watermark; {@code Long.MIN_VALUE} if none. */
    public final long watermark;
    /** Whether every input of the gate is idle. */
    public final boolean idle;

    public GateReport(Long epoch, Stage stage, Color active, int watermarkStage, Long toggle, Long floor,
            long maxPassed, long watermark, boolean idle) {
        this.epoch = epoch;
        this.stage = stage;
        this.active = active;
        this.watermarkStage = watermarkStage;
        this.toggle = toggle;
        this.floor = floor;
        this.maxPassed = maxPassed;
        this.watermark = watermark;
        this.idle = idle;
    }

    /** The report of a gate that applied {@code s} (null: none yet). */
    public static GateReport of(CoordinationState s, long maxPassed, long watermark, boolean idle) {
        if (s == null) {
            return new GateReport(null, null, null, -1, null, null, maxPassed, watermark, idle);
        }
        return new GateReport(s.epoch(), s.stage(), s.active(), s.watermarkStage().ordinal(),
                s.hasToggle() ? s.watermarkToggleValue() : null, s.hasFloor() ? s.floor() : null,
                maxPassed, watermark, idle);
    }

    /** {@code of(s, ...).line()}. */
    static String line(CoordinationState s, long maxPassed, long watermark, boolean idle) {
        return of(s, maxPassed, watermark, idle).line();
    }

    /** The gauge's line. */
    public String line() {
        return "epoch=" + (epoch == null ? "" : Long.toUnsignedString(epoch))
                + " stage=" + (stage == null ? "" : stage.wire())
                + " active=" + (active == null ? "" : active.wire())
                + " watermark-stage=" + watermarkStage
                + " toggle=" + (toggle == null ? "" : toggle.toString())
                + " floor=" + (floor == null ? "" : floor.toString())
                + " max-passed=" + maxPassed
                + " watermark=" + watermark
                + " idle=" + idle;
    }

    /**
     * Parses a line strictly: the keys of {@link #line()} in that order, then any unknown keys
     * (ignored). Throws {@link IllegalArgumentException} naming the key on anything else.
     */
    public static GateReport parse(String line) {
        String[] parts = line.split(" ", -1);
        if (parts.length < KEYS.length) {
            throw new IllegalArgumentException("gate report has " + parts.length + " fields, expected at least "
                    + KEYS.length + " (" + String.join(", ", KEYS) + "): '" + line + "'");
        }
        String[] v = new String[KEYS.length];
        for (int i = 0; i < KEYS.length; i++) {
            String prefix = KEYS[i] + "=";
            if (!parts[i].startsWith(prefix)) {
                throw new IllegalArgumentException("gate report field " + (i + 1) + " must be `" + KEYS[i] + "=...`, got '"
                        + parts[i] + "' in '" + line + "'");
            }
            v[i] = parts[i].substring(prefix.length());
        }
        Long epoch = v[0].isEmpty() ? null : unsigned(KEYS[0], v[0]);
        Stage stage = v[1].isEmpty() ? null : Stage.fromWire(v[1]);
        if (!v[1].isEmpty() && stage == null) {
            throw invalid(KEYS[1], v[1], Stage.EXPECTED);
        }
        Color active = v[2].isEmpty() ? null : Color.fromWire(v[2]);
        if (!v[2].isEmpty() && active == null) {
            throw invalid(KEYS[2], v[2], Color.EXPECTED);
        }
        int ws = (int) signed(KEYS[3], v[3]);
        if (ws < -1 || ws > 2) {
            throw invalid(KEYS[3], v[3], "-1, 0, 1 or 2");
        }
        boolean none = epoch == null;
        if (none != (stage == null) || none != (active == null) || none != (ws == -1)) {
            throw new IllegalArgumentException("gate report: epoch, stage, active and watermark-stage must all be "
                    + "empty (-1) or all be set: '" + line + "'");
        }
        Long toggle = v[4].isEmpty() ? null : signed(KEYS[4], v[4]);
        Long floor = v[5].isEmpty() ? null : signed(KEYS[5], v[5]);
        long max = signed(KEYS[6], v[6]);
        long wm = signed(KEYS[7], v[7]);
        if (!v[8].equals("true") && !v[8].equals("false")) {
            throw invalid(KEYS[8], v[8], "true or false");
        }
        return new GateReport(epoch, stage, active, ws, toggle, floor, max, wm, v[8].equals("true"));
    }

    private static IllegalArgumentException invalid(String key, String value, String expected) {
        return new IllegalArgumentException("gate report `" + key + "`: '" + value + "' is not " + expected);
    }

    private static long unsigned(String key, String raw) {
        try {
            if (raw.startsWith("+") || raw.startsWith("-")) {
                throw new NumberFormatException();
            }
            return Long.parseUnsignedLong(raw);
        } catch (NumberFormatException e) {
            throw invalid(key, raw, CoordinationState.UNSIGNED);
        }
    }

    private static long signed(String key, String raw) {
        try {
            if (raw.startsWith("+")) {
                throw new NumberFormatException();
            }
            return Long.parseLong(raw);
        } catch (NumberFormatException e) {
            throw invalid(key, raw, "a decimal integer within i64");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GateReport && ((GateReport) o).line().equals(line());
    }

    @Override
    public int hashCode() {
        return line().hashCode();
    }

    @Override
    public String toString() {
        return line();
    }
}
