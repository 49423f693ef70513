#ifndef LOCKSTEP_CDNSSD_SHIM_H
#define LOCKSTEP_CDNSSD_SHIM_H
// avahi installs its Bonjour compatibility header in a directory of its own; Apple's systems
// have it on the default path. Including it by path avoids pkg-config's -D_REENTRANT, which
// SwiftPM refuses with a warning on every build.
#if __has_include(<avahi-compat-libdns_sd/dns_sd.h>)
#include <avahi-compat-libdns_sd/dns_sd.h>
#else
#include <dns_sd.h>
#endif
#endif
