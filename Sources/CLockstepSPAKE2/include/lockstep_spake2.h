#ifndef LOCKSTEP_SPAKE2_H
#define LOCKSTEP_SPAKE2_H

// BoringSSL's SPAKE2 over curve25519 (draft-irtf-cfrg-spake2-02, as Magic Wormhole-style pairing
// uses it), in the copy of BoringSSL that swift-crypto builds and links into every Lockstep binary
// under its symbol prefix. swift-crypto exposes no PAKE, and its CCryptoBoringSSL module is not a
// product, so the four functions are declared here as BoringSSL's curve25519.h declares them.
// A swift-crypto without them fails to link: CI would say so, never a silent fallback.

#include <stddef.h>
#include <stdint.h>

typedef struct spake2_ctx_st lockstep_spake2_ctx;

enum lockstep_spake2_role { lockstep_spake2_alice = 0, lockstep_spake2_bob = 1 };

#define LOCKSTEP_SPAKE2_MSG_SIZE 32
#define LOCKSTEP_SPAKE2_KEY_SIZE 64

lockstep_spake2_ctx *CCryptoBoringSSL_SPAKE2_CTX_new(enum lockstep_spake2_role my_role, const uint8_t *my_name, size_t my_name_len,
                                                     const uint8_t *their_name, size_t their_name_len);
void CCryptoBoringSSL_SPAKE2_CTX_free(lockstep_spake2_ctx *ctx);
int CCryptoBoringSSL_SPAKE2_generate_msg(lockstep_spake2_ctx *ctx, uint8_t *out, size_t *out_len, size_t max_out_len,
                                         const uint8_t *password, size_t password_len);
int CCryptoBoringSSL_SPAKE2_process_msg(lockstep_spake2_ctx *ctx, uint8_t *out_key, size_t *out_key_len, size_t max_out_key_len,
                                        const uint8_t *their_msg, size_t their_msg_len);

#endif
