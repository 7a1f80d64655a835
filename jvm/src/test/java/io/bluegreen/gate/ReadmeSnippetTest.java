package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** README's gate placement (step 2 of "Use it on your cluster") compiles against this library. */
final class ReadmeSnippetTest {
    /** The inline code of README that places the gate: `BlueGreenSinks.sinkTo(...)`. */
    static String snippet(String readme) {
        Matcher m = Pattern.compile("`(BlueGreenSinks\\.sinkTo\\([^`]*\\))`").matcher(readme);
        assertTrue(m.find(), "README.md shows no `BlueGreenSinks.sinkTo(...)` placement");
        return m.group(1);
    }

    @Test
    @DisplayName("README: the gate placement it shows compiles against the library")
    void readmeSnippetCompiles() throws Exception {
        String readme = Files.readString(Path.of(System.getProperty("bluegreen.repo", ".")).resolve("README.md"), StandardCharsets.UTF_8);
        String code = snippet(readme);
        String source = "package readme;\n"
                + "import io.bluegreen.gate.*;\n"
                + "import io.bluegreen.gate.sink.*;\n"
                + "import org.apache.flink.api.connector.sink2.Sink;\n"
                + "import org.apache.flink.streaming.api.datastream.DataStream;\n"
                + "final class Snippet {\n"
                + "    static void place(DataStream<String> stream, Color color, Sink<String> sink) {\n"
                + "        " + code + ";\n"
                + "    }\n"
                + "}\n";
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertTrue(javac != null, "a JDK (javac) runs the tests");
        Path out = Files.createTempDirectory("readme-snippet");
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        JavaFileObject file = new SimpleJavaFileObject(java.net.URI.create("string:///readme/Snippet.java"), JavaFileObject.Kind.SOURCE) {
            @Override
            public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                return source;
            }
        };
        StringWriter diagnostics = new StringWriter();
        boolean ok = javac.getTask(diagnostics, null, null,
                List.of("-classpath", classpath, "-d", out.toString(), "-proc:none"), null, List.of(file)).call();
        assertTrue(ok, "README.md's snippet `" + code + "` does not compile:\n" + diagnostics);
        assertTrue(Files.exists(out.resolve("readme/Snippet.class")));
    }

    @Test
    @DisplayName("README: a snippet that no longer matches the API fails to compile (the check bites)")
    void brokenSnippetIsCaught() {
        assertEquals("BlueGreenSinks.sinkTo(a, b)", snippet("x `BlueGreenSinks.sinkTo(a, b)` y"));
    }
}
