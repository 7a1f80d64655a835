package io.bluegreen.gate;

/**
 * Runs every Java test ({@link TestRunner}) plus the JNI shim's ({@link JniStateSourceTest}), which
 * need the native library built by cargo; scripts/java-test.sh uses this entry point.
 */
public final class JniTestRunner {
    private JniTestRunner() {}

    public static void main(String[] args) {
        JniStateSourceTest.register();
        TestRunner.main(args);
    }
}
