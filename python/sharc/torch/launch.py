# SPDX-License-Identifier: BSD-3-Clause
"""torch's launch variables under mpirun and srun, from what libsharc reads of them.

init_process_group("sharc") reads torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, ...);
under mpirun or srun init_env() sets them from the launcher's, as libsharc's bootstrap reads
those (sharc.launch_info: its detection, its Slurm node list and port rules). Nothing here
reads a launcher's variable itself.
"""

import os

import sharc


def _from_launcher(env, info):
    """Set torch's variables from mpirun's or srun's (@info), where torch's are not set."""
    env["RANK"], env["WORLD_SIZE"] = str(info.rank), str(info.size)
    if info.local_rank >= 0:
        env["LOCAL_RANK"] = str(info.local_rank)
    if info.local_size > 0:
        env["LOCAL_WORLD_SIZE"] = str(info.local_size)
    if "MASTER_PORT" not in env and info.store_port:
        env["MASTER_PORT"] = str(info.store_port)
    if "MASTER_ADDR" not in env:
        if info.nnodes <= 1:
            env["MASTER_ADDR"] = "127.0.0.1"
        elif info.store_host:
            env["MASTER_ADDR"] = info.store_host
        else:
            raise sharc.InvalidError("init_env: a job on %d nodes needs MASTER_ADDR (rank 0's "
                                     "host)" % info.nnodes, op="init_env")


def init_env():
    """Set torch's launch variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) from
    mpirun's (OMPI_COMM_WORLD_*) or srun's (SLURM_*) where RANK is not set, as libsharc reads
    them, so that init_process_group("sharc") works under those launchers too. MASTER_ADDR
    defaults to 127.0.0.1 for a one-node job, else to the store host sharc would use (under
    Slurm the first host of the step's node list; under mpirun set it); MASTER_PORT to the
    store port sharc would use (under Slurm: 12000 + SLURM_JOB_ID % 20000, sharc's rule),
    else 29500. Returns (rank, world_size)."""
    env = os.environ
    if "RANK" not in env:
        info = sharc.launch_info()
        if info.launcher in ("mpirun", "slurm"):
            _from_launcher(env, info)
    env.setdefault("RANK", "0")
    env.setdefault("WORLD_SIZE", "1")
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29500")
    return int(env["RANK"]), int(env["WORLD_SIZE"])
