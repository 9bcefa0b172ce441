# SPDX-License-Identifier: BSD-3-Clause
"""A process that leaves with futures in flight and its group never destroyed (torch_p2p.sh):
rank 1 asks for the future of a receive nobody sends to, and for the futures of all-reduces
with a callback each; both ranks then exit without destroy_process_group. The C++ backend's
completer thread must end at exit, before the interpreter stops (no "terminate called", no
abort, no wait for the receive), and each rank exits 0.
"""

import torch
import torch.distributed as dist

import sharc.torch  # noqa: F401 (registers the backend)

dist.init_process_group("sharc")
rank = dist.get_rank()
seen = []
if rank == 1:
    dist.irecv(torch.zeros(4), 0, tag=3).get_future()  # never sent
futs = [dist.all_reduce(torch.ones(1024), async_op=True).get_future().then(
    lambda f: seen.append(1)) for _ in range(20)]
futs[0].wait()
print("rank %d (%s): leaving with futures in flight" % (rank, sharc.torch.implementation),
      flush=True)
