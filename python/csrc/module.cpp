/* SPDX-License-Identifier: BSD-3-Clause */
// module.cpp: the Python module of the C++ sharc backend (sharc.torch._native): create()
// makes the default group's sharc communicator with the explicit bootstrap (the store address
// and token agreed through torch's store by sharc/torch/rendezvous.py) in the process's shared
// sharc context; create_group() makes a later group's from the default group's
// (sharc_comm_create_group: its members only, no rendezvous). Each returns the c10d Backend
// torch.distributed registers, which owns its communicator. ProcessGroupSharc's Python class
// adds what sharc's FSDP2 hooks call: the quantized wires.
#include <mutex>

#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "backend.hpp"
#include "util.hpp"

namespace py = pybind11;

namespace sharc_torch
{

using BackendPtr = c10::intrusive_ptr<c10d::Backend>;

// The default group's backend, while it lives and is not shut down: later groups are made
// from its communicator. Replaced by the next default group (a second init_process_group).
static std::mutex world_mutex;
static std::optional<c10::weak_intrusive_ptr<ProcessGroupSharc>> world;

static c10::intrusive_ptr<ProcessGroupSharc> liveWorld()
{
    std::lock_guard<std::mutex> lock(world_mutex);
    c10::intrusive_ptr<ProcessGroupSharc> w = world ? world->lock() : nullptr;
    return (w && w->usable()) ? w : nullptr;
}

[[noreturn]] static void createFailed(const char *call, sharc_status_t status, unsigned long mark)
{
    std::string msg = std::string(call) + ": " + sharc_status_string(status);
    std::string logged = loggedSince(mark);
    std::rethrow_exception(sharcError(status, logged.empty() ? msg : msg + ": " + logged));
}

static std::chrono::milliseconds millis(double seconds)
{
    return std::chrono::milliseconds((long long)(seconds * 1000.0));
}

// A group with a communicator of its own (sharc's explicit bootstrap, one process: single),
// of @global_ranks of the default group, named @name by torch; no ranks: the default group,
// the parent of later ones.
static BackendPtr create(uintptr_t ctx_handle, int rank, int size, const std::string &store_addr,
                         const std::string &token, double timeout_s,
                         const std::vector<uint64_t> &global_ranks, const std::string &name)
{
    auto ctx = reinterpret_cast<sharc_context_h>(ctx_handle);
    sharc_comm_params_t params = {};
    sharc_comm_h comm = nullptr;
    sharc_status_t status;
    unsigned long mark = errorMark();

    TORCH_CHECK_VALUE(ctx != nullptr, "sharc backend: no sharc context");
    params.field_mask = SHARC_COMM_PARAM_BOOTSTRAP;
    if (size == 1) {
        params.bootstrap = SHARC_BOOTSTRAP_SINGLE;
    } else {
        params.bootstrap = SHARC_BOOTSTRAP_EXPLICIT;
        params.field_mask |=
            SHARC_COMM_PARAM_RANK | SHARC_COMM_PARAM_STORE_ADDR | SHARC_COMM_PARAM_TOKEN;
        params.rank = rank;
        params.size = size;
        params.store_addr = store_addr.c_str();
        params.token = token.c_str();
    }
    {
        py::gil_scoped_release nogil; // the other ranks arrive meanwhile
        status = sharc_comm_create(ctx, &params, &comm);
    }
    if (status != SHARC_OK) {
        createFailed("sharc_comm_create", status, mark);
    }
    auto pg = c10::make_intrusive<ProcessGroupSharc>(ctx, comm, rank, size, millis(timeout_s));
    std::vector<uint64_t> ranks = global_ranks;
    for (int r = 0; ranks.empty() && r < size; r++) {
        ranks.push_back(r);
    }
    pg->describe(ranks, name);
    if (global_ranks.empty()) {
        std::lock_guard<std::mutex> lock(world_mutex);
        world = c10::weak_intrusive_ptr<ProcessGroupSharc>(pg);
    }
    return pg;
}

// The default group's size, 0 while there is none (a group is then made with create()).
static int worldSize()
{
    auto w = liveWorld();
    return w ? w->getSize() : 0;
}

// A group of @ranks of the default group, called by those ranks only; @tag tells apart
// groups of one list made at once (torch's group name).
static BackendPtr createGroup(const std::vector<int> &ranks, int tag, double timeout_s,
                              const std::string &name)
{
    auto w = liveWorld();
    TORCH_CHECK_VALUE(w != nullptr, "sharc backend: no default sharc group to make a group from");
    sharc_comm_h comm = nullptr;
    sharc_status_t status;
    unsigned long mark = errorMark();
    {
        py::gil_scoped_release nogil;
        status = sharc_comm_create_group(w->comm(), ranks.data(), (int)ranks.size(), tag, &comm);
    }
    if (status != SHARC_OK) {
        createFailed("sharc_comm_create_group", status, mark);
    }
    auto pg = c10::make_intrusive<ProcessGroupSharc>(w->context(), comm, sharc_comm_rank(comm),
                                                     sharc_comm_size(comm), millis(timeout_s));
    pg->describe(std::vector<uint64_t>(ranks.begin(), ranks.end()), name);
    return pg;
}

// A quantized wire from Python: None, a name ("int8", "fp8") or (name, block).
static std::optional<std::pair<sharc_wire_t, size_t>> wireOf(const py::object &wire)
{
    if (wire.is_none()) {
        return std::nullopt;
    }
    py::object name = wire, block = py::none();
    if (py::isinstance<py::tuple>(wire)) {
        auto t = wire.cast<py::tuple>();
        TORCH_CHECK_VALUE(t.size() == 2, "sharc backend: a wire is a name or (name, block)");
        name = t[0];
        block = t[1];
    }
    sharc_wire_t w;
    std::string n = py::str(name);
    TORCH_CHECK_VALUE(sharc_wire_from_name(n.c_str(), &w) == SHARC_OK, "sharc backend: wire ", n,
                      " is not one of sharc's (full, int8, fp8)");
    return std::make_pair(w, block.is_none() ? size_t(0) : block.cast<size_t>());
}

} // namespace sharc_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    using sharc_torch::ProcessGroupSharc;
    py::module_::import("torch.distributed");
    m.doc() = "The sharc torch.distributed backend in C++ (see sharc/torch/native.py)";
    m.def("create", &sharc_torch::create, py::arg("ctx"), py::arg("rank"), py::arg("size"),
          py::arg("store_addr"), py::arg("token"), py::arg("timeout_s"), py::arg("global_ranks"),
          py::arg("name"));
    m.def("create_group", &sharc_torch::createGroup, py::arg("ranks"), py::arg("tag"),
          py::arg("timeout_s"), py::arg("name"));
    m.def("world_size", &sharc_torch::worldSize,
          "the default sharc group's size (0: none), the parent of create_group's groups");
    m.def(
        "allocated", [] { return sharc_torch::allocated_.load(); },
        "bytes of sharc_mem_alloc memory the groups' allocateTensor has taken");
    // what sharc's FSDP2 hooks call (sharc/torch/fsdp.py)
    py::class_<ProcessGroupSharc, c10d::Backend, c10::intrusive_ptr<ProcessGroupSharc>>(
        m, "ProcessGroupSharc")
        .def_property_readonly(
            "comm_handle", [](ProcessGroupSharc &pg) { return (uintptr_t)pg.comm(); },
            "the group's sharc_comm_h (0 once shut down); the group owns it")
        .def(
            "all_gather_single",
            [](ProcessGroupSharc &pg, at::Tensor output, at::Tensor input, py::object,
               py::object wire) {
                auto w = sharc_torch::wireOf(wire);
                if (!w) {
                    c10d::AllgatherOptions opts;
                    return pg._allgather_base(output, input, opts);
                }
                return pg.allgatherWire(output, input, w->first, w->second);
            },
            py::arg("output"), py::arg("input"), py::arg("opts") = py::none(),
            py::arg("wire") = py::none())
        .def(
            "reduce_scatter_single",
            [](ProcessGroupSharc &pg, at::Tensor output, at::Tensor input, py::object opts,
               py::object wire) {
                c10d::ReduceOp op = opts.is_none() ? c10d::ReduceOp(c10d::ReduceOp::SUM)
                                                   : opts.attr("reduceOp").cast<c10d::ReduceOp>();
                auto w = sharc_torch::wireOf(wire);
                if (!w) {
                    c10d::ReduceScatterOptions o;
                    o.reduceOp = op;
                    return pg._reduce_scatter_base(output, input, o);
                }
                return pg.reduceScatterWire(output, input, op, w->first, w->second);
            },
            py::arg("output"), py::arg("input"), py::arg("opts") = py::none(),
            py::arg("wire") = py::none());
    // the completer threads end at exit while the interpreter is whole (a thread inside torch
    // setting a future as the interpreter stops its threads aborts the process); without the
    // GIL, which a future's callbacks in those threads take
    py::module_::import("atexit").attr("register")(py::cpp_function([] {
        py::gil_scoped_release nogil;
        ProcessGroupSharc::stopAllCompleters();
    }));
    m.attr("cuda") = py::bool_(
#ifdef SHARC_TORCH_CUDA
        true
#else
        false
#endif
    );
}
