/* robust.h - the outlier rule the robust fit (fits.c), the range selection (ranges.c) and the
 * spike filter (stats.c) share: a point is an outlier beyond ROBUST_Z robust standard deviations
 * (MAD_SCALE x the MAD) from the median, in at most MAX_ROUNDS rounds, never below MIN_POINTS
 * points. */
#ifndef NETBENCH_ROBUST_H
#define NETBENCH_ROBUST_H

#include "analysis.h"

/* Modified z-score threshold (Iglewicz & Hoaglin) and the normal-consistency factor of the MAD. */
#define ROBUST_Z 3.5
#define MAD_SCALE NB_MAD_TO_SD
#define MAX_ROUNDS 3
#define MIN_POINTS 3
#define SIGMA_FLOOR_RELATIVE 0.01 /* robust sigma never below 1 % of mean |y| */

#endif
