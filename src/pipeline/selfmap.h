/* selfmap.h: where the reference repeats itself (selfmap.c).
 *
 * A query that shows a part of the reference which appears twice (an
 * illustration turned half a turn onto itself, a motif drawn again
 * elsewhere, a row of identical windows) fits both places equally: the
 * honest answer is "ambiguous".  The query's search only compares the
 * placements that its own draws proposed, and the twin of the right one
 * need not be among them: the stripes set of docs/calibration.md answered
 * two such crops with the twin, confidently (0.70 and 0.50, 2000 px off).
 *
 * The self-maps S are found once, when the reference is prepared: a sample
 * of level 0's corner pairs that are not in its table vote in that table
 * as a query would (a pair in it would find itself); each row's best is a
 * place where the same shapes lie around another pair, a similarity from
 * one pair to the other, refined over the reference's own edges (the
 * IRLS of any candidate: points without a partner drop out, so a repeat
 * that covers a part of the image refines on that part).  Kept: those
 * that carry the pair away from itself and explain a good share of the
 * reference's edges.  At query time each answer h meets the rivals S h
 * (matcher.c's self_rivals), whatever the query's draws: the ambiguity
 * test sees the twin.  Measured (docs/calibration.md, 2026-11-27): the
 * exact symmetries and repeats of the stripes set explain 0.24 to 0.97
 * of their reference's edges (a half turn 0.97, tiles 0.40 to 0.49,
 * planks 0.74 to 0.89), a brick wall 0.24 to 0.63, lines of text 0.21 to
 * 0.23, the photo tier's Storm 0.22 to 0.56; the best rows of the 21
 * other photographs, illustrations and public stills 0.19 at most (small
 * slides and turns of smooth curves, which the probes along the edges and
 * the uncertainty already judge: one kept at 0.02 turned a right photo
 * crop, TwoWings crop03 at 0.79, into "ambiguous"). */
#ifndef GM_SELFMAP_H
#define GM_SELFMAP_H

#include "pipeline/matcher.h"

/* Corner pairs of level 0 outside its table that vote, at most. */
#ifndef GM_SELF_BASES
#define GM_SELF_BASES 512
#endif
/* The strongest rows (by the vote's score against chance), one per
 * place, refined, with GM_SELF_ITERS iterations each. */
#define GM_SELF_ROWS 8
#define GM_SELF_ITERS 6
/* A row whose pair lies within this share of the level's shortest basis
 * of the pair it found, at both ends, is the same place (an overlapping
 * pair of neighbouring corners), not a repeat. */
#define GM_SELF_NEAR 1.0
/* A refined self-map is kept when it explains at least this share of the
 * reference's edge points (the strict test's whole). */
#define GM_SELF_MIN_WHOLE 0.25

/* The self-maps of level l (its corners, bases and table built; s its
 * side, whose points and cloud are still there), in level l's working
 * coordinates on both sides, the inverse of each too: at most
 * 2 GM_SELF_MAX in out, their count in *n.  map: level l's edge map as the
 * backend reads it.  Draws from GM_DRAW_KEY: a function of the image. */
gm_status gm_selfmaps_find(const gm_backend_ops *be, void *lane, const ref_level *l,
                           const side *s, gm_map_at map, double out[][9], int *n);

#endif
