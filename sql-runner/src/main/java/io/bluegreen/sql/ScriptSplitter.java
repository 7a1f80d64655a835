package io.bluegreen.sql;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Splits a Flink SQL script into statements at top-level semicolons, as the SQL client does: a
 * semicolon inside a string ({@code '...'}), a quoted identifier ({@code `...`}) or a comment
 * ({@code -- ...}, {@code /* ... *}{@code /}) does not end a statement, and
 * {@code EXECUTE STATEMENT SET BEGIN ...; ...; END} is one statement. Comments are kept in the
 * statement text (Flink's parser skips them); statements that are only whitespace and comments
 * are dropped.
 */
public final class ScriptSplitter {
    private ScriptSplitter() {}

    /** The statements of {@code script}, without their terminating semicolons. */
    public static List<String> split(String script) {
        List<String> pieces = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        int n = script.length();
        for (int i = 0; i < n; i++) {
            char c = script.charAt(i);
            if (c == '\'' || c == '`' || c == '"') {
                int end = closing(script, i, c);
                current.append(script, i, end);
                i = end - 1;
            } else if (c == '-' && i + 1 < n && script.charAt(i + 1) == '-') {
                int end = script.indexOf('\n', i);
                end = end < 0 ? n : end;
                current.append(script, i, end);
                i = end - 1;
            } else if (c == '/' && i + 1 < n && script.charAt(i + 1) == '*') {
                int end = script.indexOf("*/", i + 2);
                end = end < 0 ? n : end + 2;
                current.append(script, i, end);
                i = end - 1;
            } else if (c == ';') {
                pieces.add(current.toString());
                current.setLength(0);
            } else {
                current.append(c);
            }
        }
        pieces.add(current.toString());
        List<String> statements = new ArrayList<>();
        StringBuilder set = null;
        for (String piece : pieces) {
            String words = normalized(piece);
            if (set != null) {
                set.append(';').append(piece);
                if (words.equals("END")) {
                    statements.add(set.toString().trim());
                    set = null;
                }
            } else if (words.startsWith("EXECUTE STATEMENT SET")) {
                set = new StringBuilder(piece);
            } else if (!words.isEmpty()) {
                statements.add(piece.trim());
            }
        }
        if (set != null) {
            throw new IllegalArgumentException("EXECUTE STATEMENT SET without its END: " + set.toString().trim());
        }
        return statements;
    }

    /** The index just after the quote that closes the one at {@code start} (a doubled quote is an escape). */
    private static int closing(String s, int start, char quote) {
        int i = start + 1;
        while (i < s.length()) {
            if (s.charAt(i) == quote) {
                if (i + 1 < s.length() && s.charAt(i + 1) == quote) {
                    i += 2;
                    continue;
                }
                return i + 1;
            }
            i++;
        }
        throw new IllegalArgumentException("unclosed " + quote + " starting at character " + start + " of the script");
    }

    /** {@code piece} without comments, its words separated by one space, upper case. */
    static String normalized(String piece) {
        String noLineComments = piece.replaceAll("(?m)--.*$", " ");
        String noComments = noLineComments.replaceAll("(?s)/\\*.*?\\*/", " ");
        return noComments.trim().replaceAll("\\s+", " ").toUpperCase(Locale.ROOT);
    }
}
