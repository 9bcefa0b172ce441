// module.cpp: the Python module of the C++ sharc backend (sharc.torch._native): create()
// makes a group's sharc communicator with the explicit bootstrap (the store address and
// token agreed through torch's store by sharc/torch/rendezvous.py) in the process's shared
// sharc context, and returns the c10d Backend torch.distributed registers.
#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "backend.hpp"
#include "util.hpp"

namespace py = pybind11;

namespace sharc_torch
{

static c10::intrusive_ptr<c10d::Backend> create(uintptr_t ctx_handle, int rank, int size,
                                                const std::string &store_addr,
                                                const std::string &token, double timeout_s)
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
        std::string msg = std::string("sharc_comm_create: ") + sharc_status_string(status);
        std::string logged = loggedSince(mark);
        std::rethrow_exception(sharcError(status, logged.empty() ? msg : msg + ": " + logged));
    }
    auto ms = std::chrono::milliseconds((long long)(timeout_s * 1000.0));
    return c10::make_intrusive<ProcessGroupSharc>(ctx, comm, rank, size, ms);
}

} // namespace sharc_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    py::module_::import("torch.distributed");
    m.doc() = "The sharc torch.distributed backend in C++ (see sharc/torch/native.py)";
    m.def("create", &sharc_torch::create, py::arg("ctx"), py::arg("rank"), py::arg("size"),
          py::arg("store_addr"), py::arg("token"), py::arg("timeout_s"));
    m.def(
        "allocated", [] { return sharc_torch::allocated_.load(); },
        "bytes of sharc_mem_alloc memory the groups' allocateTensor has taken");
    m.attr("cuda") = py::bool_(
#ifdef SHARC_TORCH_CUDA
        true
#else
        false
#endif
    );
}
