// Declarations only (see include/lockstep_spake2.h); the definitions come from swift-crypto's BoringSSL.
#include "lockstep_spake2.h"
