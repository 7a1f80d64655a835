package io.bluegreen.gate;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The line every gate subtask publishes in the gauge {@code bluegreenGateAppliedState}, the
 * controller's only acknowledgement: space-separated {@code key=value} pairs in this order, every
 * key always present, e.g.
 * {@code epoch=7 stage=TRANSITIONING active=GREEN watermark-stage=1 toggle=1000 floor= max-passed=998 watermark=995 idle=false}.
 * Before any state is applied, epoch, stage, active, toggle and floor are empty and watermark-stage
 * is -1. Readers ignore unknown trailing keys. After {@code idle} a gate writes its own color,
 * {@code color=BLUE} (the color it was built with, so that the controller can refuse a job whose
 * gates were told the other color), and a gate with a lasting problem
 * appends {@code problem=<text>} (percent-encoded: every byte outside {@code !..~}, and {@code %},
 * as {@code %XX} of its UTF-8), e.g. {@code problem=state%20source:%20sidecar...}; readers older
 * than the key ignore it. The Java twin of {@code bluegreen_protocol::GateReport}.
 */
public final class GateReport {
    static final String[] KEYS = {"epoch", "stage", "active", "watermark-stage", "toggle", "floor", "max-passed", "watermark", "idle"};
    /** The optional key after {@link #KEYS}: the color the gate was built with. */
    static final String COLOR_KEY = "color";
    /** The optional key after {@link #KEYS} (and {@link #COLOR_KEY}): the gate's lasting problem. */
    static final String PROBLEM_KEY = "problem";
    /** The longest problem a line carries, in characters (longer ones are cut, marked by "..."). */
    static final int PROBLEM_MAX_CHARS = 300;

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
    /** The color the gate was built with, which decides what it passes; null from a gate older than the key. */
    public final Color color;
    /**
     * What keeps the gate from working now (its state source unreachable, an update refused), as
     * {@link Gate#currentProblem()} says; null when nothing does.
     */
    public final String problem;

    public GateReport(Long epoch, Stage stage, Color active, int watermarkStage, Long toggle, Long floor,
            long maxPassed, long watermark, boolean idle) {
        this(epoch, stage, active, watermarkStage, toggle, floor, maxPassed, watermark, idle, null, null);
    }

    public GateReport(Long epoch, Stage stage, Color active, int watermarkStage, Long toggle, Long floor,
            long maxPassed, long watermark, boolean idle, Color color, String problem) {
        this.epoch = epoch;
        this.stage = stage;
        this.active = active;
        this.watermarkStage = watermarkStage;
        this.toggle = toggle;
        this.floor = floor;
        this.maxPassed = maxPassed;
        this.watermark = watermark;
        this.idle = idle;
        this.color = color;
        this.problem = problem == null || problem.isEmpty() ? null
                : problem.length() > PROBLEM_MAX_CHARS ? problem.substring(0, PROBLEM_MAX_CHARS - 3) + "..." : problem;
    }

    /** The report of a gate that applied {@code s} (null: none yet). */
    public static GateReport of(CoordinationState s, long maxPassed, long watermark, boolean idle) {
        return of(s, maxPassed, watermark, idle, null, null);
    }

    /**
     * The report of a gate of {@code color} (null: not said) that applied {@code s} (null: none
     * yet) and has {@code problem} (null: none).
     */
    public static GateReport of(CoordinationState s, long maxPassed, long watermark, boolean idle, Color color,
            String problem) {
        if (s == null) {
            return new GateReport(null, null, null, -1, null, null, maxPassed, watermark, idle, color, problem);
        }
        return new GateReport(s.epoch(), s.stage(), s.active(), s.watermarkStage().ordinal(),
                s.hasToggle() ? s.watermarkToggleValue() : null, s.hasFloor() ? s.floor() : null,
                maxPassed, watermark, idle, color, problem);
    }

    /** {@code of(s, ...).line()}. */
    static String line(CoordinationState s, long maxPassed, long watermark, boolean idle, Color color,
            String problem) {
        return of(s, maxPassed, watermark, idle, color, problem).line();
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
                + " idle=" + idle
                + (color == null ? "" : " " + COLOR_KEY + "=" + color.wire())
                + (problem == null ? "" : " " + PROBLEM_KEY + "=" + encodeProblem(problem));
    }

    /** {@code problem} on the wire: one token, every byte outside {@code !..~} and {@code %} as {@code %XX}. */
    static String encodeProblem(String problem) {
        StringBuilder out = new StringBuilder();
        for (byte b : problem.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xFF;
            if (c > ' ' && c <= '~' && c != '%') {
                out.append((char) c);
            } else {
                out.append('%').append(HEX[c >> 4]).append(HEX[c & 0xF]);
            }
        }
        return out.toString();
    }

    /** The text of a {@code problem} token; throws {@link ParseException} on a bad escape. */
    static String decodeProblem(String raw) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c != '%') {
                bytes.write(c);
                continue;
            }
            int hi = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 1), 16) : -1;
            int lo = hi < 0 ? -1 : Character.digit(raw.charAt(i + 2), 16);
            if (lo < 0) {
                throw invalid(PROBLEM_KEY, raw, PROBLEM_EXPECTED);
            }
            bytes.write(hi * 16 + lo);
            i += 2;
        }
        return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
    }

    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /** Whether this gate acknowledges the proposal W of {@code epoch}: that epoch, W proposed or set, toggle = W. */
    public boolean acknowledges(long epoch, long w) {
        return this.epoch != null && this.epoch == epoch && watermarkStage >= 1 && toggle != null && toggle == w;
    }

    /** Whether this gate is past W: idle, or its input watermark above W. */
    public boolean past(long w) {
        return idle || watermark > w;
    }

    /** Why a line is not a gate report; the twin of Rust's {@code GateReportError}. */
    public static final class ParseException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        /** The error kinds of {@code protocol/vectors/gate-reports.json}. */
        public enum Kind { MissingKey, UnexpectedKey, InvalidValue, Inconsistent }

        private final Kind kind;
        private final String key;

        ParseException(Kind kind, String key, String message) {
            super(message);
            this.kind = kind;
            this.key = key;
        }

        public Kind kind() {
            return kind;
        }

        /** The report key at fault. */
        public String key() {
            return key;
        }
    }

    private static final String ALL = String.join(", ", KEYS);
    private static final String U64 = "empty (no state applied yet) or a non-negative decimal integer";
    private static final String I64 = "a decimal integer within i64 (-9223372036854775808 for none)";
    private static final String I64_OR_EMPTY = "empty (none) or a decimal integer within i64";
    private static final String WSTAGE = "one of -1 (no state applied yet), 0 (NOT_SET), 1 (WAITING), 2 (SET)";
    private static final String PROBLEM_EXPECTED = "text with every byte outside ! to ~, and %, written as %XX";

    /**
     * Parses a line strictly, as the controller does: the keys of {@link #line()} in that order,
     * separated by whitespace, then anything (ignored but a {@code color} and a {@code problem} token). Throws {@link ParseException} naming the key.
     */
    public static GateReport parse(String line) {
        String[] tokens = Arrays.stream(line.split("[ \\t\\n\\r\\f]+")).filter(t -> !t.isEmpty()).toArray(String[]::new);
        String[] v = new String[KEYS.length];
        for (int i = 0; i < KEYS.length; i++) {
            String key = KEYS[i];
            if (i >= tokens.length) {
                throw new ParseException(ParseException.Kind.MissingKey, key, "gate report: key `" + key
                        + "` is missing; a gate writes all of " + ALL + " in this order: upgrade the gate");
            }
            if (!tokens[i].startsWith(key + "=")) {
                throw new ParseException(ParseException.Kind.UnexpectedKey, key, "gate report: expected `" + key
                        + "=...` but found \"" + tokens[i] + "\"; a gate writes all of " + ALL + " in this order");
            }
            v[i] = tokens[i].substring(key.length() + 1);
        }
        Long epoch = null;
        if (!v[0].isEmpty()) {
            try {
                if (!v[0].chars().allMatch(c -> c >= '0' && c <= '9')) {
                    throw new NumberFormatException();
                }
                epoch = Long.parseUnsignedLong(v[0]);
            } catch (NumberFormatException e) {
                throw invalid(KEYS[0], v[0], U64);
            }
        }
        Stage stage = v[1].isEmpty() ? null : Stage.fromWire(v[1]);
        if (!v[1].isEmpty() && stage == null) {
            throw invalid(KEYS[1], v[1], Stage.EXPECTED);
        }
        Color active = v[2].isEmpty() ? null : Color.fromWire(v[2]);
        if (!v[2].isEmpty() && active == null) {
            throw invalid(KEYS[2], v[2], Color.EXPECTED);
        }
        int ws;
        switch (v[3]) {
            case "-1": ws = -1; break;
            case "0": ws = 0; break;
            case "1": ws = 1; break;
            case "2": ws = 2; break;
            default: throw invalid(KEYS[3], v[3], WSTAGE);
        }
        Long toggle = v[4].isEmpty() ? null : strictI64(KEYS[4], v[4], I64_OR_EMPTY);
        Long floor = v[5].isEmpty() ? null : strictI64(KEYS[5], v[5], I64_OR_EMPTY);
        long max = strictI64(KEYS[6], v[6], I64);
        long wm = strictI64(KEYS[7], v[7], I64);
        boolean idle;
        if (v[8].equals("true")) {
            idle = true;
        } else if (v[8].equals("false")) {
            idle = false;
        } else {
            throw invalid(KEYS[8], v[8], "true or false");
        }
        boolean none = epoch == null && stage == null && active == null && ws == -1;
        boolean all = epoch != null && stage != null && active != null && ws != -1;
        if (none) {
            for (int i : new int[] {4, 5}) {
                if (!v[i].isEmpty()) {
                    throw inconsistent(KEYS[i], v[i], "must be empty before any state is applied (watermark-stage=-1)");
                }
            }
        } else if (all) {
            if (ws == 0 && toggle != null) {
                throw inconsistent(KEYS[4], v[4], "must be empty when watermark-stage=0 (NOT_SET)");
            }
            if (ws != 0 && toggle == null) {
                throw inconsistent(KEYS[4], "", "must hold W when watermark-stage is 1 (WAITING) or 2 (SET)");
            }
        } else {
            int i = 0;
            while (i < 4 && !(v[i].isEmpty() || v[i].equals("-1"))) {
                i++;
            }
            if (i == 4) {
                i = 0;
            }
            throw inconsistent(KEYS[i], v[i], "epoch, stage, active and watermark-stage are either all set or all empty (watermark-stage=-1)");
        }
        Color color = null;
        String problem = null;
        boolean colorSeen = false;
        boolean problemSeen = false;
        for (int i = KEYS.length; i < tokens.length; i++) {
            if (!colorSeen && tokens[i].startsWith(COLOR_KEY + "=")) {
                String raw = tokens[i].substring(COLOR_KEY.length() + 1);
                color = Color.fromWire(raw);
                if (color == null) {
                    throw invalid(COLOR_KEY, raw, Color.EXPECTED);
                }
                colorSeen = true;
            } else if (!problemSeen && tokens[i].startsWith(PROBLEM_KEY + "=")) {
                problem = decodeProblem(tokens[i].substring(PROBLEM_KEY.length() + 1));
                problemSeen = true;
            }
        }
        return new GateReport(epoch, stage, active, ws, toggle, floor, max, wm, idle, color, problem);
    }

    private static ParseException invalid(String key, String value, String expected) {
        return new ParseException(ParseException.Kind.InvalidValue, key,
                "gate report: key `" + key + "` has invalid value \"" + value + "\"; expected " + expected);
    }

    private static ParseException inconsistent(String key, String value, String reason) {
        return new ParseException(ParseException.Kind.Inconsistent, key,
                "gate report: key `" + key + "` = \"" + value + "\" is inconsistent: " + reason);
    }

    private static long strictI64(String key, String raw, String expected) {
        String digits = raw.startsWith("-") ? raw.substring(1) : raw;
        if (digits.isEmpty() || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw invalid(key, raw, expected);
        }
        try {
            return Long.parseLong(raw);
        } catch (NumberFormatException e) {
            throw invalid(key, raw, expected);
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
