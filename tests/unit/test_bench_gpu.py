"""`bench --device webgpu` tells a hardware adapter from a software one by its `adapter.info`, and
says which adapter it got and with which flags when it refuses."""

from __future__ import annotations

import pytest

from buildtools.bench.gpu import GPU_FLAGS, classify, refusal

# as Chromium 150 reports them (SwiftShader: measured on this machine with GPU_FLAGS)
SWIFTSHADER = {"vendor": "google", "architecture": "swiftshader", "device": "0xc0de",
               "description": "SwiftShader Device (Subzero)", "type": "CPU", "backend": "vulkan",
               "driver": "SwiftShader driver 5.0.0", "is_fallback_adapter": True}
NVIDIA = {"vendor": "nvidia", "architecture": "ampere", "device": "0x2204", "description": "NVIDIA GeForce RTX 3090",
          "type": "discrete GPU", "backend": "vulkan", "driver": "NVIDIA 550.54", "is_fallback_adapter": False}
INTEL = {"vendor": "intel", "architecture": "gen-12lp", "device": "", "description": "", "is_fallback_adapter": None}


@pytest.mark.parametrize(("info", "because"), [
    (None, "no WebGPU adapter"),
    (SWIFTSHADER, "fallback adapter"),
    ({**SWIFTSHADER, "is_fallback_adapter": None, "type": None}, "swiftshader"),  # without developer features
    ({"vendor": "google", "architecture": "swiftshader", "device": "", "description": ""}, "swiftshader"),
    ({**NVIDIA, "type": "CPU", "description": "", "driver": ""}, "type is CPU"),
    ({"vendor": "mesa", "architecture": "", "description": "llvmpipe (LLVM 15.0.6, 256 bits)",
      "is_fallback_adapter": False}, "llvmpipe"),
    ({"vendor": "mesa", "architecture": "", "description": "", "driver": "lavapipe 23.2"}, "lavapipe"),
])
def test_software_and_missing_adapters_are_refused_with_the_reason(info, because):
    adapter = classify(info)
    assert not adapter.hardware and because in adapter.software_because


@pytest.mark.parametrize("info", [NVIDIA, INTEL])
def test_hardware_adapters_pass(info):
    assert classify(info).hardware


def test_the_refusal_names_the_adapter_and_the_flags():
    message = refusal(classify(SWIFTSHADER), ["--no-sandbox", *GPU_FLAGS])
    assert "google swiftshader" in message and "SwiftShader Device (Subzero)" in message
    assert "--enable-unsafe-webgpu --enable-features=Vulkan --use-angle=vulkan" in message
    assert "not a hardware GPU" in message
    assert "no WebGPU adapter" in refusal(classify(None, "navigator.gpu is missing"), GPU_FLAGS)
