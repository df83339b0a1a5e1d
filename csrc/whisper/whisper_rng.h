/* The generator of random sampling (whisper_sampling.c), seeded per window
 * (whisper_window.c). */
#ifndef SW_WHISPER_RNG_H
#define SW_WHISPER_RNG_H

#include <stdint.h>

/* xoshiro256** (seeded through splitmix64). */
typedef struct sw_rng {
    uint64_t s[4];
} sw_rng;

void sw_rng_seed(sw_rng *rng, uint64_t seed);
/* The next 53 random bits, m: the uniform m * 2^-53 as an integer, so that
 * it travels to a device's sampler exactly (backend.h sw_search_row). */
uint64_t sw_rng_next53(sw_rng *rng);
/* uniform in [0, 1), 53 bits: sw_rng_next53 * 2^-53 */
double sw_rng_uniform(sw_rng *rng);

#endif
