# SPDX-License-Identifier: BSD-3-Clause
"""How a process group gets its sharc communicator.

The default group's is made with sharc's explicit bootstrap: its rank 0 picks a free TCP port
for sharc's store on the address its peers reach it at, and a random job token, and hands both
to the others through the group's own torch store. Every later group is made from it by its
members alone (sharc_comm_create_group: the same sharc store, no new rendezvous, a few
milliseconds); a group whose default group is not sharc's gets a store of its own as the
default group does. The process group itself is the C++ backend's (native.py).
"""

import os
import secrets
import socket
import zlib

import sharc

_used_store_addrs = set()  # store addresses this process has used (see store_address)
_world = None  # the default group's communicator, while it is open (see group_comm)


def _my_host():
    """The address rank 0's peers reach it at: TORCH_SHARC_HOST, else this host's address
    toward MASTER_ADDR (the interface a packet to it leaves by), else the host name's."""
    host = os.environ.get("TORCH_SHARC_HOST")
    if host:
        return host
    master = os.environ.get("MASTER_ADDR")
    if master:
        try:
            fam = socket.AF_INET6 if ":" in master else socket.AF_INET
            with socket.socket(fam, socket.SOCK_DGRAM) as s:
                s.connect((master, 9))  # no packet is sent: this only picks the route
                return s.getsockname()[0]
        except OSError:
            pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _addr(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def _free_port(host, avoid):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(64):
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if _addr(host, port) not in avoid:
            return port
    raise sharc.SharcIOError("sharc backend: no free TCP port on %s for sharc's store" % host,
                             op="init")


def store_address(store, rank, size, timeout):
    """("host:port", token) of a new group's sharc store, the same on every rank. Rank 0
    picks a free port and a job token and tells the others through torch's @store (the
    group's own prefix). sharc numbers the communicators made from one store address per
    process, so the address must be new to every rank: each rank says which it has used, and
    rank 0 avoids them all. The keys are numbered by how many times this rank has asked the
    store: torch names the default group alike after a destroy_process_group, so a second
    init_process_group may find the first one's keys in the same store."""
    gen = store.add("sharc/round/%d" % rank, 1)
    store.set("sharc/%d/used/%d" % (gen, rank), " ".join(sorted(_used_store_addrs)))
    if rank == 0:
        used = set()
        for r in range(size):
            used.update(store.get("sharc/%d/used/%d" % (gen, r)).decode().split())
        host = _my_host()
        addr = _addr(host, _free_port(host, used))
        store.set("sharc/%d/addr" % gen, "%s %s" % (addr, secrets.token_hex(16)))
    addr, token = store.get("sharc/%d/addr" % gen).decode().split()
    _used_store_addrs.add(addr)
    return addr, token


def group_tag(group_name):
    """sharc_comm_create_group's tag of torch's group @group_name: the same on every member,
    it tells apart groups of one member list made at once."""
    return zlib.crc32(group_name.encode()) & 0x7fffffff


def group_comm(store, rank, size, timeout, global_ranks, group_name):
    """The sharc communicator of a new process group: this process is @rank of @size, ranks
    @global_ranks of the default group ([] for the default group itself), named @group_name
    by torch alike on every member."""
    global _world
    ctx = sharc.default_context()
    if size == 1:
        return sharc.Comm(ctx, bootstrap="single")
    world = _world
    if global_ranks and world is not None and world.handle is not None and \
            max(global_ranks) < world.size:
        # torch calls this on the members only; the name tells apart groups of one list
        return world.create_group(global_ranks, tag=group_tag(group_name))
    addr, token = store_address(store, rank, size, timeout)
    comm = sharc.Comm(ctx, bootstrap="explicit", rank=rank, size=size, store_addr=addr,
                      token=token)
    if not global_ranks:
        _world = comm
    return comm


def forget_comm(comm):
    """@comm is closing: groups made later do not come from it."""
    global _world
    if _world is comm:
        _world = None
