package io.bluegreen.gate;

/**
 * Why a coordination state could not be parsed, or why an update was refused. Mirrors the Rust
 * {@code ProtocolError}: {@link #kind()} is the language-neutral kind name used by the shared
 * vectors, {@link #key()} the ConfigMap key the error is about.
 */
public final class ProtocolException extends Exception {
    private static final long serialVersionUID = 1L;

    /** The error kinds, spelled as in {@code ProtocolError::kind}. */
    public enum Kind {
        MissingKey,
        InvalidValue,
        Inconsistent,
        UnsupportedVersion,
        StaleEpoch,
        IllegalTransition
    }

    private final Kind kind;
    private final String key;

    ProtocolException(Kind kind, String key, String message) {
        super(message);
        this.kind = kind;
        this.key = key;
    }

    /** The kind of error. */
    public Kind kind() {
        return kind;
    }

    /** The ConfigMap key the error is about. */
    public String key() {
        return key;
    }

    static ProtocolException missingKey(String key, String expected) {
        return new ProtocolException(
                Kind.MissingKey,
                key,
                "coordination ConfigMap: key `" + key + "` is missing; expected " + expected);
    }

    static ProtocolException invalidValue(String key, String value, String expected) {
        return new ProtocolException(
                Kind.InvalidValue,
                key,
                "coordination ConfigMap: key `" + key + "` has invalid value " + quote(value)
                        + "; expected " + expected);
    }

    static ProtocolException inconsistent(String key, String value, String reason) {
        return new ProtocolException(
                Kind.Inconsistent,
                key,
                "coordination ConfigMap: key `" + key + "` = " + quote(value)
                        + " is inconsistent: " + reason);
    }

    static ProtocolException unsupportedVersion(long found, int supported) {
        return new ProtocolException(
                Kind.UnsupportedVersion,
                CoordinationState.Keys.PROTOCOL_VERSION,
                "coordination ConfigMap: key `" + CoordinationState.Keys.PROTOCOL_VERSION + "` = "
                        + Long.toUnsignedString(found)
                        + " is not supported; this build speaks protocol version " + supported
                        + ": upgrade the gate");
    }

    static ProtocolException staleEpoch(long current, long offered) {
        return new ProtocolException(
                Kind.StaleEpoch,
                CoordinationState.Keys.EPOCH,
                "stale coordination state: key `" + CoordinationState.Keys.EPOCH + "` went back from "
                        + Long.toUnsignedString(current) + " to " + Long.toUnsignedString(offered)
                        + "; the older update is ignored");
    }

    static ProtocolException illegalTransition(long epoch, String from, String to, String reason) {
        return new ProtocolException(
                Kind.IllegalTransition,
                CoordinationState.Keys.EPOCH,
                "illegal coordination transition in epoch " + Long.toUnsignedString(epoch) + ": "
                        + from + " -> " + to + ": " + reason);
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u{%x}", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
