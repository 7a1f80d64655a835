package io.bluegreen.gate;
final class HandoverJobTest { static void register() {} }
