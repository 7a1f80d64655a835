package io.bluegreen.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ScriptSplitterTest {
    @Test
    @DisplayName("script splitter: semicolons in strings, quoted identifiers and comments do not end a statement")
    void quotesAndComments() {
        String script = "-- a comment; not a statement\n"
                + "CREATE TABLE `a;b` (x STRING) WITH ('connector' = 'filesystem', 'csv.field-delimiter' = ';');\n"
                + "/* block; comment */ INSERT INTO t SELECT 'it''s; fine' FROM s;\n"
                + "  ;\n"
                + "SET 'table.local-time-zone' = 'UTC'";
        List<String> statements = ScriptSplitter.split(script);
        assertEquals(3, statements.size(), statements.toString());
        assertEquals("-- a comment; not a statement\n"
                + "CREATE TABLE `a;b` (x STRING) WITH ('connector' = 'filesystem', 'csv.field-delimiter' = ';')", statements.get(0));
        assertEquals("/* block; comment */ INSERT INTO t SELECT 'it''s; fine' FROM s", statements.get(1));
        assertEquals("SET 'table.local-time-zone' = 'UTC'", statements.get(2));
    }

    @Test
    @DisplayName("script splitter: EXECUTE STATEMENT SET BEGIN ...; ...; END is one statement")
    void statementSet() {
        List<String> statements = ScriptSplitter.split(
                "EXECUTE STATEMENT SET\nBEGIN\nINSERT INTO a SELECT * FROM s;\nINSERT INTO b SELECT * FROM s;\nEND;\nSELECT 1;");
        assertEquals(List.of("EXECUTE STATEMENT SET\nBEGIN\nINSERT INTO a SELECT * FROM s;\nINSERT INTO b SELECT * FROM s;\nEND",
                "SELECT 1"), statements);
    }

    @Test
    @DisplayName("script splitter: an unclosed string or statement set is an error naming it")
    void unclosed() {
        assertThrows(IllegalArgumentException.class, () -> ScriptSplitter.split("SELECT 'oops"));
        assertThrows(IllegalArgumentException.class, () -> ScriptSplitter.split("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;"));
    }
}
