package io.bluegreen.gate;

import java.io.Serializable;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The content of the coordination ConfigMap ({@code <deployment>-bluegreen}), parsed strictly.
 * Immutable. The Java twin of the Rust {@code CoordinationState}; the specification is
 * {@code docs/protocol.md}.
 *
 * <p>{@code epoch} and {@code deletionDelayMs} are unsigned 64-bit values held in a {@code long}
 * (compare them with {@link Long#compareUnsigned}); {@code watermarkToggleValue} (W) is meaningful
 * only when {@code watermarkStage != WATERMARK_NOT_SET}. The floor F ({@code floor}, optional) is
 * the W of the last completed handover: records with {@code t <= F} are dropped by both colors.
 */
public final class CoordinationState implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The protocol version this build writes and understands (key {@code protocol-version}). */
    public static final int PROTOCOL_VERSION = 1;

    /** The ConfigMap data keys. */
    public static final class Keys {
        public static final String ACTIVE_DEPLOYMENT_TYPE = "active-deployment-type";
        public static final String DEPLOYMENT_DELETION_DELAY_MS = "deployment-deletion-delay-ms";
        public static final String STAGE = "stage";
        public static final String WATERMARK_TOGGLE_VALUE = "watermark-toggle-value";
        public static final String WATERMARK_STAGE = "watermark-stage";
        public static final String EPOCH = "epoch";
        public static final String PROTOCOL_VERSION = "protocol-version";
        /** Optional: absent or empty means no floor. */
        public static final String FLOOR = "floor";

        private Keys() {}
    }

    static final String UNSIGNED =
            "a non-negative decimal integer (digits only, at most 18446744073709551615)";
    static final String SIGNED =
            "an event time in epoch milliseconds: a decimal integer, optionally negative, within i64";

    private final Color active;
    private final long deletionDelayMs;
    private final Stage stage;
    private final WatermarkStage watermarkStage;
    private final long watermarkToggleValue;
    private final long epoch;
    private final boolean hasFloor;
    private final long floor;

    private CoordinationState(
            Color active,
            long deletionDelayMs,
            Stage stage,
            WatermarkStage watermarkStage,
            long w,
            long epoch,
            Long floor) {
        this.active = Objects.requireNonNull(active, "active");
        this.deletionDelayMs = deletionDelayMs;
        this.stage = Objects.requireNonNull(stage, "stage");
        this.watermarkStage = Objects.requireNonNull(watermarkStage, "watermarkStage");
        this.watermarkToggleValue = watermarkStage == WatermarkStage.WATERMARK_NOT_SET ? 0 : w;
        this.epoch = epoch;
        this.hasFloor = floor != null;
        this.floor = floor == null ? 0 : floor;
    }

    /**
     * A state from its parts, without a floor and without validation (use {@link #validate()});
     * {@code w} is ignored for {@code WATERMARK_NOT_SET}.
     */
    public static CoordinationState of(
            long epoch, Color active, Stage stage, WatermarkStage watermarkStage, long w, long deletionDelayMs) {
        return new CoordinationState(active, deletionDelayMs, stage, watermarkStage, w, epoch, null);
    }

    /** The same state with floor {@code f} ({@code null}: none), without validation. */
    public CoordinationState withFloor(Long f) {
        return new CoordinationState(active, deletionDelayMs, stage, watermarkStage, watermarkToggleValue, epoch, f);
    }

    /** The state the controller writes when it creates a deployment's ConfigMap. */
    public static CoordinationState initial(Color active, long deletionDelayMs) {
        return of(0, active, Stage.INITIALIZING, WatermarkStage.WATERMARK_NOT_SET, 0, deletionDelayMs);
    }

    public Color active() {
        return active;
    }

    /** Unsigned. */
    public long deletionDelayMs() {
        return deletionDelayMs;
    }

    public Stage stage() {
        return stage;
    }

    public WatermarkStage watermarkStage() {
        return watermarkStage;
    }

    /** W; meaningful only when {@link #hasToggle()}. */
    public long watermarkToggleValue() {
        return watermarkToggleValue;
    }

    /** Whether W is proposed or set. */
    public boolean hasToggle() {
        return watermarkStage != WatermarkStage.WATERMARK_NOT_SET;
    }

    /** Unsigned. */
    public long epoch() {
        return epoch;
    }

    /** Whether a floor is in force. */
    public boolean hasFloor() {
        return hasFloor;
    }

    /** F; meaningful only when {@link #hasFloor()}. */
    public long floor() {
        return floor;
    }

    /** The floor, or null. */
    Long floorOrNull() {
        return hasFloor ? floor : null;
    }

    /** The same state with another deletion delay. */
    public CoordinationState withDeletionDelayMs(long delay) {
        return new CoordinationState(active, delay, stage, watermarkStage, watermarkToggleValue, epoch, floorOrNull());
    }

    /**
     * Parses ConfigMap data strictly. Unknown keys are ignored (forward compatibility); a missing
     * key, a misspelled value, a malformed or negative number, or keys that contradict each other
     * give an error naming the key. Same order of checks as the Rust implementation.
     */
    public static CoordinationState fromData(Map<String, String> data) throws ProtocolException {
        long version = parseUnsigned(data, Keys.PROTOCOL_VERSION);
        if (version != PROTOCOL_VERSION) {
            // Rust: u32::try_from(version).unwrap_or(u32::MAX)
            long found = Long.compareUnsigned(version, 0xFFFF_FFFFL) > 0 ? 0xFFFF_FFFFL : version;
            throw ProtocolException.unsupportedVersion(found, PROTOCOL_VERSION);
        }
        Color active = Color.fromWire(get(data, Keys.ACTIVE_DEPLOYMENT_TYPE, Color.EXPECTED));
        if (active == null) {
            throw ProtocolException.invalidValue(
                    Keys.ACTIVE_DEPLOYMENT_TYPE, data.get(Keys.ACTIVE_DEPLOYMENT_TYPE), Color.EXPECTED);
        }
        long delay = parseUnsigned(data, Keys.DEPLOYMENT_DELETION_DELAY_MS);
        Stage stage = Stage.fromWire(get(data, Keys.STAGE, Stage.EXPECTED));
        if (stage == null) {
            throw ProtocolException.invalidValue(Keys.STAGE, data.get(Keys.STAGE), Stage.EXPECTED);
        }
        WatermarkStage wstage =
                WatermarkStage.fromWire(get(data, Keys.WATERMARK_STAGE, WatermarkStage.EXPECTED));
        if (wstage == null) {
            throw ProtocolException.invalidValue(
                    Keys.WATERMARK_STAGE, data.get(Keys.WATERMARK_STAGE), WatermarkStage.EXPECTED);
        }
        long epoch = parseUnsigned(data, Keys.EPOCH);
        long w = parseToggle(data, wstage);
        Long floor = parseFloor(data);
        CoordinationState parsed = new CoordinationState(active, delay, stage, wstage, w, epoch, floor);
        parsed.validate();
        return parsed;
    }

    /** The ConfigMap data for this state (every protocol key, nothing else). */
    public Map<String, String> toData() {
        Map<String, String> m = new TreeMap<>();
        m.put(Keys.ACTIVE_DEPLOYMENT_TYPE, active.wire());
        m.put(Keys.DEPLOYMENT_DELETION_DELAY_MS, Long.toUnsignedString(deletionDelayMs));
        m.put(Keys.STAGE, stage.wire());
        m.put(Keys.WATERMARK_TOGGLE_VALUE, hasToggle() ? Long.toString(watermarkToggleValue) : "");
        m.put(Keys.WATERMARK_STAGE, watermarkStage.wire());
        m.put(Keys.EPOCH, Long.toUnsignedString(epoch));
        m.put(Keys.PROTOCOL_VERSION, Integer.toString(PROTOCOL_VERSION));
        m.put(Keys.FLOOR, hasFloor ? Long.toString(floor) : "");
        return m;
    }

    /**
     * Checks that {@code stage} and the toggle agree (INITIALIZING and RUNNING have no W,
     * CLEAR_TO_TEARDOWN needs W set, FAILING happens only before W is set), then the floor
     * (none in INITIALIZING, below W whenever W is proposed or set).
     */
    public void validate() throws ProtocolException {
        String reason = invalidReason();
        if (reason != null) {
            throw ProtocolException.inconsistent(Keys.WATERMARK_STAGE, watermarkStage.wire(), reason);
        }
        reason = invalidFloorReason();
        if (reason != null) {
            throw ProtocolException.inconsistent(Keys.FLOOR, Long.toString(floor), reason);
        }
    }

    /** Whether {@link #validate()} passes. */
    public boolean isValid() {
        return invalidReason() == null && invalidFloorReason() == null;
    }

    private String invalidFloorReason() {
        if (!hasFloor) {
            return null;
        }
        if (stage == Stage.INITIALIZING) {
            return "INITIALIZING has no floor (no handover has completed yet): leave `floor` empty";
        }
        if (hasToggle() && floor >= watermarkToggleValue) {
            return "the floor must be below W (watermark-toggle-value): propose W >= floor + 1";
        }
        return null;
    }

    private String invalidReason() {
        switch (stage) {
            case INITIALIZING:
            case RUNNING:
                return watermarkStage == WatermarkStage.WATERMARK_NOT_SET
                        ? null
                        : "INITIALIZING and RUNNING require WATERMARK_NOT_SET and an empty watermark-toggle-value";
            case TRANSITIONING:
                return null;
            case CLEAR_TO_TEARDOWN:
                return watermarkStage == WatermarkStage.WATERMARK_SET
                        ? null
                        : "CLEAR_TO_TEARDOWN requires WATERMARK_SET";
            case FAILING:
                return watermarkStage != WatermarkStage.WATERMARK_SET
                        ? null
                        : "FAILING is only reachable before the toggle is set; after WATERMARK_SET the handover is finished forward";
            default:
                throw new AssertionError(stage);
        }
    }

    /** The color that emits records above W during a handover ({@code active}), or null. */
    public Color incoming() {
        switch (stage) {
            case TRANSITIONING:
            case CLEAR_TO_TEARDOWN:
            case FAILING:
                return active;
            default:
                return null;
        }
    }

    private static String get(Map<String, String> data, String key, String expected)
            throws ProtocolException {
        String v = data.get(key);
        if (v == null) {
            throw ProtocolException.missingKey(key, expected);
        }
        return v;
    }

    private static boolean allAsciiDigits(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    private static long parseUnsigned(Map<String, String> data, String key) throws ProtocolException {
        String raw = get(data, key, UNSIGNED);
        if (!allAsciiDigits(raw)) {
            throw ProtocolException.invalidValue(key, raw, UNSIGNED);
        }
        try {
            return Long.parseUnsignedLong(raw);
        } catch (NumberFormatException e) {
            throw ProtocolException.invalidValue(key, raw, UNSIGNED);
        }
    }

    private static Long parseFloor(Map<String, String> data) throws ProtocolException {
        String raw = data.get(Keys.FLOOR);
        if (raw == null || raw.isEmpty()) {
            return null;
        }
        return parseSigned(Keys.FLOOR, raw);
    }

    private static long parseSigned(String key, String raw) throws ProtocolException {
        String digits = raw.startsWith("-") ? raw.substring(1) : raw;
        if (!allAsciiDigits(digits)) {
            throw ProtocolException.invalidValue(key, raw, SIGNED);
        }
        try {
            return Long.parseLong(raw);
        } catch (NumberFormatException e) {
            throw ProtocolException.invalidValue(key, raw, SIGNED);
        }
    }

    private static long parseToggle(Map<String, String> data, WatermarkStage wstage)
            throws ProtocolException {
        String key = Keys.WATERMARK_TOGGLE_VALUE;
        String raw = get(data, key, "empty, or W in epoch milliseconds");
        if (wstage == WatermarkStage.WATERMARK_NOT_SET) {
            if (raw.isEmpty()) {
                return 0;
            }
            throw ProtocolException.inconsistent(
                    key, raw, "must be empty while watermark-stage is WATERMARK_NOT_SET");
        }
        return parseSigned(key, raw);
    }

    /** Short form for logs and errors, e.g. {@code epoch 3 TRANSITIONING active=GREEN WATERMARK_SET(W=1000) floor=900}. */
    @Override
    public String toString() {
        String s = "epoch " + Long.toUnsignedString(epoch) + " " + stage + " active=" + active + " " + watermarkStage;
        s = hasToggle() ? s + "(W=" + watermarkToggleValue + ")" : s;
        return hasFloor ? s + " floor=" + floor : s;
    }

    /** Same stage, watermark stage, W, floor and active color (ignores epoch and deletion delay). */
    boolean samePhase(CoordinationState o) {
        return stage == o.stage
                && watermarkStage == o.watermarkStage
                && watermarkToggleValue == o.watermarkToggleValue
                && sameFloor(o)
                && active == o.active;
    }

    /** Whether both have no floor or the same floor. */
    boolean sameFloor(CoordinationState o) {
        return hasFloor == o.hasFloor && floor == o.floor;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof CoordinationState)) {
            return false;
        }
        CoordinationState x = (CoordinationState) o;
        return epoch == x.epoch && deletionDelayMs == x.deletionDelayMs && samePhase(x);
    }

    @Override
    public int hashCode() {
        return Objects.hash(active, deletionDelayMs, stage, watermarkStage, watermarkToggleValue, epoch, floorOrNull());
    }
}
