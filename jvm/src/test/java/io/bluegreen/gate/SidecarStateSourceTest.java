package io.bluegreen.gate;
final class SidecarStateSourceTest { static void register() {} }
