package io.bluegreen.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class SqlRunnerTest {
    @Test
    @DisplayName("runner arguments: --var NAME=VALUE (repeatable) replaces ${NAME}; an unset ${NAME} or a bad --var is an error")
    void vars() {
        Map<String, String> args = SqlRunner.parse(new String[] {"--script", "s.sql", "--var", "WORK=/w", "--var", "N=2"});
        assertEquals("path '/w/in' x 2 $notavar", SqlRunner.substitute("path '${WORK}/in' x ${N} $notavar", args.get("var")));
        assertThrows(IllegalArgumentException.class, () -> SqlRunner.substitute("${OTHER}", args.get("var")));
        assertThrows(IllegalArgumentException.class, () -> SqlRunner.parse(new String[] {"--script", "s", "--var", "nope"}));
        assertThrows(IllegalArgumentException.class, () -> SqlRunner.parse(new String[] {"--color", "BLUE"}));
    }
}
