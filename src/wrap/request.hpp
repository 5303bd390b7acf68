// The request a wrapper sends for its program: what the command line
// (and nvcc's and hipcc's flag variables) says of the job, the engine its
// launcher hands it to, and, for a build memgate has not seen, the
// compile's preprocessed size (wrap/tu_size.hpp).
#pragma once

#include "wrap/client.hpp"
#include "wrap/protocol.hpp"

namespace memgate {

RequestMsg make_request(const Launch& launch);

}  // namespace memgate
