package io.bluegreen.gate;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A minimal strict JSON reader (RFC 8259) so the library needs no JSON dependency: objects become
 * {@code LinkedHashMap<String,Object>}, arrays {@code ArrayList<Object>}, strings {@code String},
 * numbers {@link Number} as {@code java.math.BigDecimal}, {@code true}/{@code false}
 * {@code Boolean}, {@code null} {@code null}. Used for the sidecar's responses and the test vectors.
 *
 * <p>It reads what the Rust side (serde_json) reads, and refuses what it refuses: at most
 * {@value #MAX_DEPTH} levels of nesting, numbers within the range of a double, Unicode escapes
 * of exactly four hex digits with surrogates in pairs, no duplicate member names. Checked on every
 * case of {@code protocol/vectors/json-cases.json} ({@code JsonCasesTest}).
 */
public final class Json {
    /** The deepest nesting of arrays and objects read (serde_json's limit: 128 levels fail). */
    public static final int MAX_DEPTH = 127;

    private final String s;
    private final int maxDepth;
    private int i;
    private int depth;

    private Json(String s, int maxDepth) {
        this.s = s;
        this.maxDepth = maxDepth;
    }

    /** Parses one JSON document. */
    public static Object parse(String text) {
        return parse(text, MAX_DEPTH);
    }

    /**
     * Parses one JSON document nested at most {@code maxDepth} levels deep (for test files that
     * describe deeply nested documents; everything the gate reads goes through {@link #parse(String)}).
     */
    static Object parse(String text, int maxDepth) {
        Json p = new Json(text, maxDepth);
        p.ws();
        Object v = p.value();
        p.ws();
        if (p.i != text.length()) {
            throw p.error("trailing characters");
        }
        return v;
    }

    /** Writes a string map as a JSON object (for tests and fake sidecars). */
    public static String writeStringMap(Map<String, String> m) {
        StringBuilder b = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, String> e : m.entrySet()) {
            if (!first) {
                b.append(',');
            }
            first = false;
            writeString(b, e.getKey());
            b.append(':');
            writeString(b, e.getValue());
        }
        return b.append('}').toString();
    }

    /** Appends {@code v} as a JSON string literal. */
    public static void writeString(StringBuilder b, String v) {
        b.append('"');
        for (int k = 0; k < v.length(); k++) {
            char c = v.charAt(k);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("invalid JSON at offset " + i + ": " + what);
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                i++;
            } else {
                break;
            }
        }
    }

    private Object value() {
        if (i >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{': return object();
            case '[': return array();
            case '"': return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) {
            throw error("expected " + word);
        }
        i += word.length();
        return v;
    }

    private void enter() {
        if (++depth > maxDepth) {
            throw error("nested deeper than " + maxDepth + " levels");
        }
    }

    private Map<String, Object> object() {
        enter();
        Map<String, Object> m = new LinkedHashMap<>();
        i++;
        ws();
        if (peek() == '}') {
            i++;
            depth--;
            return m;
        }
        while (true) {
            ws();
            if (peek() != '"') {
                throw error("expected a string key");
            }
            String k = string();
            ws();
            expect(':');
            ws();
            Object v = value();
            if (m.containsKey(k)) {
                throw error("duplicate key \"" + k + "\"");
            }
            m.put(k, v);
            ws();
            char c = next();
            if (c == '}') {
                depth--;
                return m;
            }
            if (c != ',') {
                throw error("expected ',' or '}'");
            }
        }
    }

    private List<Object> array() {
        enter();
        List<Object> l = new ArrayList<>();
        i++;
        ws();
        if (peek() == ']') {
            i++;
            depth--;
            return l;
        }
        while (true) {
            ws();
            l.add(value());
            ws();
            char c = next();
            if (c == ']') {
                depth--;
                return l;
            }
            if (c != ',') {
                throw error("expected ',' or ']'");
            }
        }
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw error("control character in string");
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"': b.append('"'); break;
                case '\\': b.append('\\'); break;
                case '/': b.append('/'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'n': b.append('\n'); break;
                case 'r': b.append('\r'); break;
                case 't': b.append('\t'); break;
                case 'u':
                    char unit = hex4();
                    if (Character.isLowSurrogate(unit)) {
                        throw error("lone trailing surrogate in \\u escape");
                    }
                    if (Character.isHighSurrogate(unit)) {
                        // Only a pair makes a character (serde_json refuses a lone half).
                        if (!s.startsWith("\\u", i)) {
                            throw error("lone leading surrogate in \\u escape");
                        }
                        i += 2;
                        char low = hex4();
                        if (!Character.isLowSurrogate(low)) {
                            throw error("lone leading surrogate in \\u escape");
                        }
                        b.append(unit);
                        unit = low;
                    }
                    b.append(unit);
                    break;
                default:
                    throw error("bad escape \\" + e);
            }
        }
    }

    /** The four hex digits of a Unicode escape (backslash, u) (ASCII digits and letters only). */
    private char hex4() {
        if (i + 4 > s.length()) {
            throw error("short \\u escape");
        }
        int v = 0;
        for (int k = 0; k < 4; k++) {
            int d = Character.digit(s.charAt(i + k), 16);
            if (d < 0 || s.charAt(i + k) > 'f') {
                throw error("bad \\u escape");
            }
            v = v * 16 + d;
        }
        i += 4;
        return (char) v;
    }

    private Number number() {
        int start = i;
        if (peek() == '-') {
            i++;
        }
        if (peek() == '0') {
            i++;
        } else if (peek() >= '1' && peek() <= '9') {
            while (peek() >= '0' && peek() <= '9') {
                i++;
            }
        } else {
            throw error("bad number");
        }
        if (peek() == '.') {
            i++;
            if (!(peek() >= '0' && peek() <= '9')) {
                throw error("bad fraction");
            }
            while (peek() >= '0' && peek() <= '9') {
                i++;
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            i++;
            if (peek() == '+' || peek() == '-') {
                i++;
            }
            if (!(peek() >= '0' && peek() <= '9')) {
                throw error("bad exponent");
            }
            while (peek() >= '0' && peek() <= '9') {
                i++;
            }
        }
        java.math.BigDecimal n;
        try {
            n = new java.math.BigDecimal(s.substring(start, i));
        } catch (NumberFormatException ex) {
            i = start;
            throw error("number out of range");
        }
        if (Double.isInfinite(n.doubleValue())) {
            i = start;
            throw error("number out of range");
        }
        return n;
    }

    private char peek() {
        return i < s.length() ? s.charAt(i) : '\0';
    }

    private char next() {
        if (i >= s.length()) {
            throw error("unexpected end");
        }
        return s.charAt(i++);
    }

    private void expect(char c) {
        if (next() != c) {
            i--;
            throw error("expected '" + c + "'");
        }
    }
}
