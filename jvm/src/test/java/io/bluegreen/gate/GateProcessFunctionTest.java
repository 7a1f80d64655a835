package io.bluegreen.gate;
final class GateProcessFunctionTest { static void register() {} }
