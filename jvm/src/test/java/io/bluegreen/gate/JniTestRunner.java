package io.bluegreen.gate;

/**
 * Runs every Java test ({@link TestRunner}) plus those that need artefacts built by cargo: the JNI
 * shim's ({@link JniStateSourceTest}) and the real sidecar's ({@link RealSidecarTest});
 * scripts/java-test.sh uses this entry point.
 */
public final class JniTestRunner {
    private JniTestRunner() {}

    public static void main(String[] args) {
        JniStateSourceTest.register();
        RealSidecarTest.register();
        TestRunner.main(args);
    }
}
