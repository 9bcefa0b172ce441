# SPDX-License-Identifier: BSD-3-Clause
"""Quantized wires from Python (make check: torch_wire.sh). sharc.Comm's allgather and
reduce_scatter with wire="int8" / "fp8": every rank gets the same gathered values, within
the wire's bound of the inputs and not exact; the reduce-scatter within one quantization per
other node of the exact sum. Then FSDP2 with sharc's hooks over int8 wires
(sharc.torch.fsdp.apply(param_wire=, reduce_wire=)) trains a tiny Llama for a few steps
beside the same run over full wires: finite losses within 2% of it, not equal to it. A wire
asked of a gloo group is refused.
"""

import math
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard
from transformers import LlamaConfig, LlamaForCausalLM

import sharc
import sharc.torch
import sharc.torch.fsdp

dist.init_process_group("sharc")
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
# the default group's own sharc communicator (torch's rendezvous made it)
comm = sharc.torch.fsdp._sharc_backend(dist.group.WORLD, torch.empty(1), "the test").comm
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("rank %d: FAILED: %s" % (rank, what), file=sys.stderr)


def inputs(r, n):
    i = torch.arange(n, dtype=torch.float64)
    return (torch.sin(0.37 * i + 1.3 * r) * torch.exp2((i // 300 % 8) - 4)).float()


def block_absmax(x, block):
    pad = (-x.numel()) % block
    return torch.nn.functional.pad(x.abs(), (0, pad)).view(-1, block).amax(1).repeat_interleave(
        block)[: x.numel()]


# all-gather: within absmax / 254 (int8), 2^-4 of the value (fp8); the same on every rank
n, block = 4099, 256
for wire, bound in (("int8", lambda x, a: a / 254 * 1.001), ("fp8", lambda x, a: x.abs() / 16 + a * 2**-18)):
    out = torch.empty(n * world)
    comm.allgather(inputs(rank, n), out, wire=wire, block=block)
    want = torch.cat([inputs(r, n) for r in range(world)])
    amax = torch.cat([block_absmax(inputs(r, n), block) for r in range(world)])
    err = (out - want).abs()
    check(bool((err <= bound(want, amax) + 1e-12).all()), "allgather %s within its bound" % wire)
    check(bool(err.max() > 0), "allgather %s is quantized" % wire)
    every = torch.empty(n * world * world)
    comm.allgather(out, every)
    check(all(torch.equal(out, c) for c in every.view(world, -1)), "allgather %s alike" % wire)

# reduce-scatter over int8: the exact sum, within one quantization per other contribution
send = torch.cat([inputs(rank, n) + r for r in range(world)])
out = torch.empty(n)
comm.reduce_scatter(send, out, wire="int8", flat=True)
exact = sum(inputs(r, n) + rank for r in range(world))
bound = sum(block_absmax(inputs(r, n) + rank, 256) / 254 for r in range(world) if r != rank)
check(bool(((out - exact).abs() <= bound * 1.001 + 1e-5).all()), "reduce_scatter int8 bound")
check(world == 1 or bool((out - exact).abs().max() > 0), "reduce_scatter int8 quantized")

# FSDP2 with sharc's hooks over int8 wires against full wires
cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  attn_implementation="eager")


def train(wires):
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    mesh = DeviceMesh.from_group(dist.group.WORLD, "cpu")
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    sharc.torch.fsdp.apply(model, param_wire=wires, reduce_wire=wires)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(6):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x = (torch.randint(0, 256, (4, 1), generator=g) + torch.arange(32)) % 256
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


full, int8 = train(None), train("int8")
worst = max(abs(a - b) / a for a, b in zip(full, int8))
print("rank %d: fsdp int8 wires: losses %s, largest relative difference %.2e"
      % (rank, ", ".join("%.4f" % v for v in int8), worst))
check(all(math.isfinite(v) for v in int8), "fsdp int8: finite losses")
check(worst <= 0.02, "fsdp int8: within 2% of full wires")
check(world == 1 or worst > 0, "fsdp int8: not equal to full wires (quantized)")

# a wire needs the sharc backend
gloo = dist.new_group(backend="gloo")
try:
    sharc.torch.fsdp.AllGather(wire="int8")(torch.empty(2 * world), torch.ones(2), gloo)
    check(False, "a wire on a gloo group is refused")
except sharc.UnsupportedError:
    pass
print("rank %d: quantized wires %s" % (rank, "FAILED" if failures else "ok"))
dist.destroy_process_group()
sys.exit(1 if failures else 0)
