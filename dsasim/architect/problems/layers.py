"""Built-in layers by name, and a shape spec for the command line.

Names:
  blog-conv                  the blog's 1x1 conv, 2048 -> 512 channels, 56 x 56, batch 1
  resnet50.NAME              the 53 convolutions of ResNet-50 (He et al., 2016) at batch 1 with the names of the
                             paper's Caffe model (conv1, res2a_branch1, res2a_branch2a, ..., res5c_branch2c); as
                             in that model, the stride-2 blocks put the stride on branch2a (and branch1)
  gemm-1024                  a 1024 x 1024 x 1024 matrix product (also gemm-M or gemm-MxNxK)
  mobilenetv2.dw1            MobileNetV2's first depthwise 3x3 conv (Sandler et al., 2018: the t=1 bottleneck
                             after the stem): 32 channels, 112 x 112, stride 1, padding 1, groups 32
  resnext50.conv2_g32        ResNeXt-50 (32x4d)'s grouped 3x3 conv of stage conv2 (Xie et al., 2017): 128 -> 128
                             channels in 32 groups of 4, 56 x 56, stride 1, padding 1

Shape specs (key=value, comma-separated; every conv key but ic, oc and h has a default):
  conv:ic=64,oc=64,h=56,k=3,p=1          w (default h), n (1), k (1), s (1), p (0), d (1), g (1: groups);
                                         kh/kw, sh/sw, ph/pw, dh/dw for unequal height and width
  conv:ic=32,oc=32,h=112,k=3,p=1,g=32    a depthwise conv (g = ic = oc); g must divide ic and oc
  gemm:m=1024,n=1024,k=1024              (also matmul:...)
"""

from __future__ import annotations

import math
import re

from dsasim.architect.nests.loopnest import ConvProblem, MatmulProblem, Problem

__all__ = ["RESNET50", "GROUPED_LAYERS", "layer_names", "parse_layer", "resnet50_layers", "distinct_resnet50"]

# (name, in_channels, out_channels, kernel, stride, padding, input height = width)
_R50: list[tuple[str, int, int, int, int, int, int]] = [("conv1", 3, 64, 7, 2, 3, 224)]


def _stage(stage: int, blocks: str, in_ch: int, mid: int, out: int, size: int, stride: int) -> None:
    out_size = size // stride
    for i, b in enumerate(blocks):
        name = f"res{stage}{b}"
        first = i == 0
        cin = in_ch if first else out
        s = stride if first else 1
        in_size = size if first else out_size
        if first:
            _R50.append((f"{name}_branch1", cin, out, 1, s, 0, in_size))
        _R50.append((f"{name}_branch2a", cin, mid, 1, s, 0, in_size))
        _R50.append((f"{name}_branch2b", mid, mid, 3, 1, 1, out_size))
        _R50.append((f"{name}_branch2c", mid, out, 1, 1, 0, out_size))


_stage(2, "abc", 64, 64, 256, 56, 1)
_stage(3, "abcd", 256, 128, 512, 56, 2)
_stage(4, "abcdef", 512, 256, 1024, 28, 2)
_stage(5, "abc", 1024, 512, 2048, 14, 2)

RESNET50: dict[str, tuple[int, int, int, int, int, int]] = {n: rest for n, *rest in _R50}


def _resnet50(short: str) -> ConvProblem:
    """The ResNet-50 convolution `short` (a name without the resnet50. prefix) at batch 1."""
    ic, oc, k, s, p, hw = RESNET50[short]
    return ConvProblem(n=1, ic=ic, oc=oc, h=hw, w=hw, kh=k, stride=s, padding=p, name=f"resnet50.{short}")


def resnet50_layers() -> dict[str, ConvProblem]:
    """All 53 ResNet-50 convolutions, by name (without the resnet50. prefix), in network order."""
    return {name: _resnet50(name) for name in RESNET50}


def distinct_resnet50() -> list[tuple[ConvProblem, list[str]]]:
    """The distinct ResNet-50 conv shapes, each with every layer name that has it, in network order."""
    groups: dict[str, tuple[ConvProblem, list[str]]] = {}
    for name, prob in resnet50_layers().items():
        key = prob.spec()
        if key not in groups:
            groups[key] = (prob, [])
        groups[key][1].append(name)
    return list(groups.values())


# grouped and depthwise examples: name -> shape spec (see the module docstring)
GROUPED_LAYERS: dict[str, str] = {
    "mobilenetv2.dw1": "conv:ic=32,oc=32,h=112,k=3,p=1,g=32",
    "resnext50.conv2_g32": "conv:ic=128,oc=128,h=56,k=3,p=1,g=32",
}


def layer_names() -> list[str]:
    """Every built-in layer name."""
    return ["blog-conv", *(f"resnet50.{n}" for n in RESNET50), "gemm-1024", *GROUPED_LAYERS]


_INT = re.compile(r"^[0-9]+$")  # ASCII only: \d also matches "٣"


def _kv(spec: str, body: str) -> dict[str, int]:
    values: dict[str, int] = {}
    for part in body.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"layer spec {spec!r}: {part!r} is not key=value")
        k, v = (x.strip() for x in part.split("=", 1))
        if not _INT.match(v):
            raise ValueError(f"layer spec {spec!r}: {k}={v!r} is not a non-negative integer")
        if k in values:
            raise ValueError(f"layer spec {spec!r}: {k} given twice")
        values[k] = int(v)
    return values


def _gemm_spec(name: str, v: dict[str, int]) -> MatmulProblem:
    unknown = sorted(set(v) - {"m", "n", "k"})
    missing = sorted({"m", "n", "k"} - set(v))
    if unknown or missing:
        raise ValueError(f"layer spec {name!r}: a gemm needs m, n and k" +
                         (f"; unknown key(s) {unknown}" if unknown else "") +
                         (f"; missing {missing}" if missing else ""))
    return MatmulProblem(v["m"], v["n"], v["k"], name=name)


def _divisors(value: int, shown: int = 12) -> str:
    """The divisors of value >= 1, ascending, as text (the first and last few when there are more than `shown`)."""
    small = [d for d in range(1, math.isqrt(value) + 1) if value % d == 0]
    found = sorted(set(small) | {value // d for d in small})
    if len(found) > shown:
        return ", ".join(map(str, found[:shown // 2])) + ", ..., " + ", ".join(map(str, found[-shown // 2:]))
    return ", ".join(map(str, found))


def _conv_spec(name: str, v: dict[str, int]) -> ConvProblem:
    allowed = {"n", "ic", "oc", "h", "w", "k", "kh", "kw", "s", "sh", "sw", "p", "ph", "pw", "d", "dh", "dw", "g"}
    unknown = sorted(set(v) - allowed)
    if unknown:
        raise ValueError(f"layer spec {name!r}: unknown key(s) {unknown}; keys are {sorted(allowed)}")
    missing = sorted({"ic", "oc", "h"} - set(v))
    if missing:
        raise ValueError(f"layer spec {name!r}: missing {missing} (e.g. conv:ic=64,oc=64,h=56,k=3,p=1)")

    def pair(key: str, default: int) -> tuple[int, int]:  # k, or kh and kw for unequal height and width
        base = v.get(key, default)
        return v.get(key + "h", base), v.get(key + "w", base)

    kh, kw = pair("k", 1)
    g = v.get("g", 1)
    if g >= 1 and (v["ic"] % g or v["oc"] % g):  # g=0 is left to ConvProblem's own range check
        raise ValueError(f"layer spec {name!r}: g={g} groups must divide both ic={v['ic']} and oc={v['oc']} (each "
                         f"group convolves ic/g input into oc/g output channels); use a common divisor: "
                         f"{_divisors(math.gcd(v['ic'], v['oc']))}")
    return ConvProblem(n=v.get("n", 1), ic=v["ic"], oc=v["oc"], h=v["h"], w=v.get("w", v["h"]), kh=kh, kw=kw,
                       stride=pair("s", 1), padding=pair("p", 0), dilation=pair("d", 1), name=name, groups=g)


_SPECS = {"gemm": _gemm_spec, "matmul": _gemm_spec, "conv": _conv_spec}


def parse_layer(text: str) -> Problem:
    """A built-in layer name or a shape spec (see the module docstring) -> ConvProblem / MatmulProblem."""
    name = text.strip()
    if name == "blog-conv":
        return ConvProblem(n=1, ic=2048, oc=512, h=56, w=56, kh=1, name="blog-conv")
    if name.startswith("resnet50."):
        short = name[len("resnet50."):]
        if short not in RESNET50:
            raise ValueError(f"unknown ResNet-50 layer {short!r}; names are conv1 and res{{2..5}}{{a..}}_branch"
                             f"{{1,2a,2b,2c}}, e.g. resnet50.res2a_branch2b; known: {', '.join(RESNET50)}")
        return _resnet50(short)
    if name in GROUPED_LAYERS:
        return _conv_spec(name, _kv(name, GROUPED_LAYERS[name].split(":", 1)[1]))
    m = re.fullmatch(r"gemm-(\d+)(?:x(\d+)x(\d+))?", name)
    if m:
        a = int(m.group(1))
        return MatmulProblem(a, int(m.group(2) or a), int(m.group(3) or a), name=name)
    if ":" in name:
        kind, body = name.split(":", 1)
        values = _kv(name, body)
        if kind.strip().lower() not in _SPECS:
            raise ValueError(f"layer spec {name!r}: unknown kind {kind.strip().lower()!r}; use conv:... or gemm:...")
        return _SPECS[kind.strip().lower()](name, values)
    raise ValueError(f"unknown layer {name!r}: use a built-in name (blog-conv, resnet50.<name>, gemm-1024, "
                     f"{', '.join(GROUPED_LAYERS)}) or a "
                     f"shape spec such as conv:ic=64,oc=64,h=56,k=3,p=1 or gemm:m=512,n=512,k=512")
