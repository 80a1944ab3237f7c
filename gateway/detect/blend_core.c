/* The blend detector's arithmetic for one request, in one call (gateway/detect/native.py loads it
 * with ctypes; gateway/detect/blend_model.py says what the model is). Python reads the request's
 * text into column numbers and subword ids; this adds up what they weigh. In numpy the same sums
 * took about ten calls a request, and in a busy gateway each call meets cold caches: two thirds
 * of the detector's time there (docs/routing.md, "What it costs the gateway").
 *
 * No state, no allocation, nothing kept between calls; every index is checked against the sizes
 * given, so a bad call returns -1 instead of reading outside the tables. */

#include <math.h>
#include <stdint.h>

/* The largest vector width accepted (the shipped vectors are 128 wide). */
#define MAX_DIM 1024

/* out[0..tasks): the request's score per task before the temperature; out[tasks]: its familiarity
 * (the cosine of its vectors with the nearest training group's centroid, 0 without vectors).
 *
 * weights: width x tasks, row-major; its last row is the bias.
 * columns: the shape columns (counts[0] of them), then each part's word columns (counts[1..parts]);
 *   a shape column weighs 1, a part's columns 1 / sqrt(their count).
 * rows: the static vectors, n_rows x dim. blocks: spans x dim x k, each span's vector weights (the
 *   first `tasks` of k) beside the groups' centroids (the rest).
 * ids, lengths: each span's subword ids, one span after another (lengths[s] of span s).
 * Returns the number of spans with a direction (their unit rows are what the blocks multiply). */
int duet_blend_scores(const float *weights, int width, int tasks,
                      const int32_t *columns, const int32_t *counts, int parts,
                      const float *rows, int n_rows, int dim,
                      const float *blocks, int k, int spans,
                      const int32_t *ids, const int32_t *lengths,
                      double *out) {
    /* The vectors' sums in float, as numpy's float32 products are (the answers agree to ~1e-7),
     * vectorised; the few weights of the columns in double. */
    float sum[MAX_DIM], vectors[MAX_DIM];
    double part[MAX_DIM];
    if (dim <= 0 || dim > MAX_DIM || tasks <= 0 || tasks > MAX_DIM || k <= tasks || k > MAX_DIM || width <= 0)
        return -1;
    const float *bias = weights + (int64_t)(width - 1) * tasks;
    for (int j = 0; j < tasks; j++) out[j] = bias[j];

    int at = 0;
    for (int p = 0; p <= parts; p++) {
        int n = counts[p];
        if (n <= 0) continue;
        double scale = p == 0 ? 1.0 : 1.0 / sqrt((double)n);
        for (int j = 0; j < tasks; j++) part[j] = 0.0;
        for (int c = 0; c < n; c++) {
            int column = columns[at + c];
            if (column < 0 || column >= width - 1) return -1;
            const float *w = weights + (int64_t)column * tasks;
            for (int j = 0; j < tasks; j++) part[j] += w[j];
        }
        at += n;
        for (int j = 0; j < tasks; j++) out[j] += scale * part[j];
    }

    for (int j = 0; j < k; j++) vectors[j] = 0.0f;
    int filled = 0;
    at = 0;
    for (int s = 0; s < spans; s++) {
        int n = lengths[s];
        if (n <= 0) continue;
        for (int d = 0; d < dim; d++) sum[d] = 0.0f;
        for (int t = 0; t < n; t++) {
            int id = ids[at + t];
            if (id < 0 || id >= n_rows) return -1;
            const float *row = rows + (int64_t)id * dim;
            for (int d = 0; d < dim; d++) sum[d] += row[d];
        }
        at += n;
        double norm = 0.0;
        for (int d = 0; d < dim; d++) norm += (double)sum[d] * sum[d];
        if (norm == 0.0) continue; /* subwords whose rows cancel: no direction, as a span with none */
        float inverse = (float)(1.0 / sqrt(norm));
        const float *block = blocks + (int64_t)s * dim * k;
        for (int d = 0; d < dim; d++) {
            float unit = sum[d] * inverse;
            const float *b = block + (int64_t)d * k;
            for (int j = 0; j < k; j++) vectors[j] += unit * b[j];
        }
        filled++;
    }
    if (filled == 0) {
        out[tasks] = 0.0;
        return 0;
    }
    for (int j = 0; j < tasks; j++) out[j] += vectors[j];
    float nearest = vectors[tasks];
    for (int j = tasks + 1; j < k; j++)
        if (vectors[j] > nearest) nearest = vectors[j];
    out[tasks] = (double)nearest / sqrt((double)filled);
    return filled;
}
