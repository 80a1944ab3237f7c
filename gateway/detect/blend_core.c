/* The blend detector for one request, in one call (gateway/detect/native.py loads it with ctypes;
 * gateway/detect/blend_model.py says what the model is, gateway/detect/blend_features.py and
 * gateway/detect/features.py how a request is read; those stay the reference, and the answers
 * here are theirs to 1e-6, tests/gateway/detect/test_native.py).
 *
 * Two entry points:
 * - duet_blend_scores: the arithmetic alone. Python reads the request's text into column numbers
 *   and subword ids; this adds up what they weigh. In numpy the same sums took about ten calls a
 *   request, and in a busy gateway each call meets cold caches.
 * - duet_blend_detect: the reading too (the words and their hashed columns, the shape signals, the
 *   instruction, the WordPiece ids of the spans) and the softmax, for texts of the characters its
 *   table reads (struct duet_chars: every character below U+20000 but two; every request of the
 *   35 sources); any other answers -2 and Python reads the request.
 *   Read in Python, a short request's text cost ~70 of a call's ~125 µs in a busy gateway, in a
 *   few dozen interpreter steps whose code is cold between requests.
 *
 * No state, no allocation, nothing kept between calls; every index is checked against the sizes
 * given, so a bad call returns -1 instead of reading outside the tables. */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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


/* ---- the reading: duet_blend_detect ---------------------------------------------------------- */

/* The most bytes of one text read here (the user window is at most 768 + 1 + 256 characters, the
 * system prompt 256, the tool results 8 x 128 + 7; 1-4 bytes each); a longer one answers -3.
 * The buffers below are sized from it, on the stack (~170 kB: every thread Python starts on Linux
 * has megabytes). */
#define MAX_TEXT 5120
/* The most columns the three hashed parts have together. */
#define MAX_BUCKETS 8192
/* The most programming words told apart (features.PROGRAMMING has ~220). */
#define MAX_PROGRAMMING 4096
/* blend_features: the instruction's first sentence's head and last sentence's tail, in characters. */
#define SPAN_CHARS 200
/* WordPiece's default: a longer word is one unknown token. */
#define MAX_WORD_CHARS 100
/* The most bytes a character's normalised text has (native.py leaves a longer one to Python), and so the
 * most a word of MAX_WORD_CHARS characters has. */
#define MAX_NORMALISED 12
#define MAX_WORD_BYTES (MAX_WORD_CHARS * MAX_NORMALISED + MAX_NORMALISED)
#define PARTS 3  /* the user turn, the system prompt, the tool results (blend_features.BUCKETS) */
#define SPANS_READ 4  /* the user window, its instruction, the system prompt, the tool results */

/* Strings to values, open addressing on zlib's crc32 of the key (built by native.py: slots is a
 * power of two at least twice the keys, so a probe always ends at an empty slot). */
struct duet_table {
    const char *blob;        /* the keys, one after another */
    const int32_t *offsets;  /* key i is blob[offsets[i], offsets[i + 1]) */
    const int32_t *values;
    const int32_t *slots;    /* a key's index, or -1 */
    int32_t n_keys, n_slots, longest;
};

/* How Python and BERT's uncased tokenizer read each character below n (native.py asks them, one
 * character at a time, and marks readable only those each reads alone as in any text: one code
 * point lowered to one, no context, a normalised text BERT's pre-tokenizer keeps whole or isolates).
 * flags: READABLE, PY_SPACE (str.isspace: re's \s, str.split, str.strip), BERT_* (bits 2-3: what
 * BERT's normaliser leaves of it, dropped, a space, a punctuation mark or part of a word);
 * lower: str.lower(); normalised: the normaliser's text of it (UTF-8), normalised_at[c] to
 * normalised_at[c + 1]. */
struct duet_chars {
    const uint8_t *flags;
    const int32_t *lower;
    const int32_t *normalised_at;
    const char *normalised;
    int32_t n;
};

#define READABLE 1
#define PY_SPACE 2
#define BERT_SHIFT 2
#define BERT_DROPPED 0
#define BERT_SPACE 1
#define BERT_PUNCTUATION 2
#define BERT_WORD 3

struct duet_blend_model {
    const float *weights; int32_t width, tasks;
    const float *rows; int32_t n_rows, dim;
    const float *blocks; int32_t k, spans;
    double temperature, familiarity_cut;
    const uint32_t *crc;              /* crc32's table, 256 entries */
    struct duet_table shapes;         /* shape feature name -> its column */
    struct duet_table programming;    /* features.PROGRAMMING -> 0..n-1 */
    struct duet_table vocabulary;     /* WordPiece token -> subword id */
    struct duet_chars chars;
    int32_t unknown;                  /* [UNK]'s id */
    int32_t parts_at[PARTS], parts_size[PARTS];
};

static uint32_t crc_add(const uint32_t *table, uint32_t state, const char *s, int n) {
    for (int i = 0; i < n; i++) state = table[(state ^ (uint8_t)s[i]) & 0xffu] ^ (state >> 8);
    return state;
}

#define CRC_START 0xffffffffu  /* zlib.crc32(s) == ~crc_add(table, CRC_START, s) */

/* The value of prefix + key (hash: its crc32), or -1. */
static int32_t find(const struct duet_table *t, uint32_t hash, const char *prefix, int plen,
                    const char *key, int n) {
    if (plen + n > t->longest || t->n_slots <= 0) return -1;
    uint32_t mask = (uint32_t)t->n_slots - 1;
    for (uint32_t slot = hash & mask, probes = 0; probes < (uint32_t)t->n_slots; slot = (slot + 1) & mask, probes++) {
        int32_t i = t->slots[slot];
        if (i < 0 || i >= t->n_keys) return -1;
        int32_t at = t->offsets[i], len = t->offsets[i + 1] - at;
        if (len == plen + n && memcmp(t->blob + at, prefix, plen) == 0 && memcmp(t->blob + at + plen, key, n) == 0)
            return t->values[i];
    }
    return -1;
}

static int32_t find_text(const struct duet_blend_model *m, const struct duet_table *t, const char *key, int n) {
    return find(t, ~crc_add(m->crc, CRC_START, key, n), "", 0, key, n);
}

/* The code point at s[i] and its length in bytes (*len); -1 where the bytes are not UTF-8. */
static int32_t decode(const char *s, int n, int i, int *len) {
    uint8_t c = (uint8_t)s[i];
    int k;
    int32_t cp;
    *len = 1;
    if (c < 0x80) return c;
    if ((c & 0xe0) == 0xc0) { k = 2; cp = c & 0x1f; }
    else if ((c & 0xf0) == 0xe0) { k = 3; cp = c & 0x0f; }
    else if ((c & 0xf8) == 0xf0) { k = 4; cp = c & 0x07; }
    else return -1;
    if (i + k > n) return -1;
    for (int j = 1; j < k; j++) {
        uint8_t d = (uint8_t)s[i + j];
        if ((d & 0xc0) != 0x80) return -1;
        cp = (cp << 6) | (d & 0x3f);
    }
    *len = k;
    return cp;
}

static int encode(int32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xc0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The start of the character before s[i]. */
static int before(const char *s, int i) {
    do i--; while (i > 0 && ((uint8_t)s[i] & 0xc0) == 0x80);
    return i;
}

static int is_lower(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }
static int is_terminal(char c) { return c == '.' || c == '!' || c == '?' || c == ':'; }

/* Whether the character at s[i] is white space to Python (its length in *len). Only on text
 * readable() passed, so every character decodes and is in the table. */
static int space_at(const struct duet_chars *c, const char *s, int n, int i, int *len) {
    int32_t cp = decode(s, n, i, len);
    return cp >= 0 && cp < c->n && (c->flags[cp] & PY_SPACE) != 0;
}

/* Every character UTF-8, in the table and readable there. */
static int readable(const struct duet_chars *c, const char *s, int n) {
    for (int i = 0, len; i < n; i += len) {
        int32_t cp = decode(s, n, i, &len);
        if (cp < 0 || cp >= c->n || !(c->flags[cp] & READABLE)) return 0;
    }
    return 1;
}

/* text.lower().translate(features._DIGITS): lowered, the digits 1-9 made 0. Returns its length, or
 * -1 where it would not fit in cap bytes. */
static int fold(const struct duet_chars *c, const char *s, int n, char *out, int cap) {
    int at = 0;
    for (int i = 0, len; i < n; i += len) {
        int32_t lower = c->lower[decode(s, n, i, &len)];
        if (lower >= '1' && lower <= '9') lower = '0';
        if (at + 4 > cap) return -1;
        at += encode(lower, out + at);
    }
    return at;
}

/* features.word_tokens over folded text: [a-z_]+ | 0+ | any other character not white space. */
static int tokens_of(const struct duet_chars *c, const char *folded, int n, int32_t *starts, int32_t *lengths) {
    int count = 0;
    for (int i = 0, len; i < n;) {
        int j;
        if (is_lower(folded[i])) for (j = i + 1; j < n && is_lower(folded[j]); j++) {}
        else if (folded[i] == '0') for (j = i + 1; j < n && folded[j] == '0'; j++) {}
        else if (space_at(c, folded, n, i, &len)) { i += len; continue; }
        else j = i + len;
        starts[count] = i; lengths[count] = j - i; count++;
        i = j;
    }
    return count;
}

/* A part's hashed columns, each once (blend_features._Buckets): crc32 of each token, and with
 * pairs of each "first second", modulo the part's size. Returns how many were written. */
static int part_columns(const struct duet_blend_model *m, int part, const char *folded,
                        const int32_t *starts, const int32_t *lengths, int count, int pairs,
                        int32_t *out, unsigned char *seen) {
    int32_t size = m->parts_size[part], at = m->parts_at[part], n = 0;
    memset(seen, 0, (size_t)size);
    for (int t = 0; t < count; t++) {
        uint32_t column = ~crc_add(m->crc, CRC_START, folded + starts[t], lengths[t]) % (uint32_t)size;
        if (!seen[column]) { seen[column] = 1; out[n++] = at + (int32_t)column; }
    }
    for (int t = 0; pairs && t + 1 < count; t++) {
        uint32_t state = crc_add(m->crc, CRC_START, folded + starts[t], lengths[t]);
        state = crc_add(m->crc, state, " ", 1);
        uint32_t column = ~crc_add(m->crc, state, folded + starts[t + 1], lengths[t + 1]) % (uint32_t)size;
        if (!seen[column]) { seen[column] = 1; out[n++] = at + (int32_t)column; }
    }
    return n;
}

static int starts_with(const char *s, int n, const char *word) {
    int len = (int)strlen(word);
    return n >= len && memcmp(s, word, (size_t)len) == 0;
}

/* features._has_code: a fence anywhere, or a line (after white space, blank lines too) starting
 * with a keyword, or with "from <no space> import ". */
static int has_code(const struct duet_chars *c, const char *t, int n) {
    static const char *const keywords[] = {"def ", "class ", "import ", "function ", "#include", "public ",
                                           "const ", "let ", "fn ", "package "};
    for (int i = 0; i + 2 < n; i++)
        if (t[i] == '`' && t[i + 1] == '`' && t[i + 2] == '`') return 1;
    for (int i = -1, len; i < n; i++) {
        if (i >= 0 && t[i] != '\n') continue;
        int j = i + 1;
        while (j < n && space_at(c, t, n, j, &len)) j += len;
        for (size_t w = 0; w < sizeof keywords / sizeof *keywords; w++)
            if (starts_with(t + j, n - j, keywords[w])) return 1;
        if (starts_with(t + j, n - j, "from ")) {
            int e = j + 5;
            while (e < n && !space_at(c, t, n, e, &len)) e += len;
            if (e > j + 5 && starts_with(t + e, n - e, " import ")) return 1;
        }
    }
    return 0;
}

/* features._bucket: floor(log2(n)), 0 below 2. */
static int magnitude(int64_t n) {
    int b = 0;
    while (n >= 2) { n >>= 1; b++; }
    return b;
}

/* [a, b) without white space at either end (str.strip). */
static void strip(const struct duet_chars *c, const char *t, int *a, int *b) {
    int len;
    while (*a < *b && space_at(c, t, *b, *a, &len)) *a += len;
    while (*b > *a) {
        int last = before(t, *b);
        if (!space_at(c, t, *b, last, &len)) break;
        *b = last;
    }
}

/* blend_features.instruction over the window: the sentences (split at (?<=[.!?:])\s+ and at \n+),
 * stripped, the empty dropped; the first's first SPAN_CHARS characters, and where there are two or
 * more, a newline and the last's last SPAN_CHARS. Returns its length in out. */
static int instruction(const struct duet_chars *c, const char *t, int n, char *out) {
    int first_at = -1, first_end = 0, last_at = -1, last_end = 0, first_piece = -1, last_piece = -1, len;
    for (int start = 0, from = 0, piece = 0;; piece++) {
        int match = -1, match_end = n;
        for (int p = from; p < n; p += len) {
            int space = space_at(c, t, n, p, &len);
            if (p > 0 && is_terminal(t[p - 1]) && space) {
                match = match_end = p;
                while (match_end < n && space_at(c, t, n, match_end, &len)) match_end += len;
                break;
            }
            if (t[p] == '\n') {
                match = match_end = p;
                while (match_end < n && t[match_end] == '\n') match_end++;
                break;
            }
        }
        int a = start, b = match < 0 ? n : match;
        strip(c, t, &a, &b);
        if (a < b) {
            if (first_piece < 0) { first_at = a; first_end = b; first_piece = piece; }
            last_at = a; last_end = b; last_piece = piece;
        }
        if (match < 0) break;
        start = from = match_end;
    }
    if (first_piece < 0) return 0;
    int head = first_at;
    for (int k = 0; k < SPAN_CHARS && head < first_end; k++) decode(t, first_end, head, &len), head += len;
    memcpy(out, t + first_at, (size_t)(head - first_at));
    if (first_piece == last_piece) return head - first_at;
    int tail = last_end;
    for (int k = 0; k < SPAN_CHARS && tail > last_at; k++) tail = before(t, tail);
    out[head - first_at] = '\n';
    memcpy(out + head - first_at + 1, t + tail, (size_t)(last_end - tail));
    return head - first_at + 1 + last_end - tail;
}

/* One word's WordPiece ids (normalised: lowered, accents stripped; no space or punctuation in it;
 * chars its length in characters): the longest known piece from the front, then "##" pieces; a
 * word with an unknown piece, or longer than MAX_WORD_CHARS, is one [UNK]. Returns the ids written. */
static int word_pieces(const struct duet_blend_model *m, const char *w, int n, int chars, int32_t *ids) {
    if (chars > MAX_WORD_CHARS) { ids[0] = m->unknown; return 1; }
    const struct duet_table *v = &m->vocabulary;
    uint32_t continued = crc_add(m->crc, CRC_START, "##", 2);
    int count = 0;
    for (int start = 0; start < n;) {
        int32_t id = -1;
        int prefix = start > 0 ? 2 : 0, end = n;
        if (end - start > v->longest - prefix) {  /* no longer piece is known: start at a character's end */
            end = start + v->longest - prefix;
            while (end > start && ((uint8_t)w[end] & 0xc0) == 0x80) end--;
        }
        while (end > start) {
            uint32_t hash = ~crc_add(m->crc, prefix ? continued : CRC_START, w + start, end - start);
            id = find(v, hash, "##", prefix, w + start, end - start);
            if (id >= 0) break;
            end = before(w, end);
            if (end < start) end = start;
        }
        if (id < 0) { ids[0] = m->unknown; return 1; }
        ids[count++] = id;
        start = end;
    }
    return count;
}

/* A span's subword ids as vectors.StaticVectors.ids reads it: split at Python's white space, then
 * as BERT's uncased tokenizer reads each run (normalised, split around punctuation, WordPiece).
 * Writes at most cap ids; -1 where it might need more (a word writes at most one id a character;
 * no character's normalised text has more characters than its own UTF-8 bytes, so the spans'
 * bytes bound their ids, and this is never reached with the table native.py builds). */
static int span_ids(const struct duet_blend_model *m, const char *t, int n, int32_t *ids, int cap) {
    const struct duet_chars *c = &m->chars;
    char word[MAX_WORD_BYTES];
    int count = 0, bytes = 0, chars = 0;
    for (int i = 0, len; i <= n; i += len) {
        int kind = BERT_SPACE;  /* the end of the text ends a word as a space does */
        int32_t cp = 0;
        len = 1;
        if (i < n) {
            cp = decode(t, n, i, &len);
            kind = c->flags[cp] & PY_SPACE ? BERT_SPACE : (c->flags[cp] >> BERT_SHIFT) & 3;
        }
        if (kind == BERT_DROPPED) continue;
        const char *text = c->normalised + c->normalised_at[cp];
        int size = c->normalised_at[cp + 1] - c->normalised_at[cp];
        if (kind == BERT_WORD) {
            for (int k = 0; k < size; k++) {
                if (bytes < MAX_WORD_BYTES) word[bytes++] = text[k];
                chars += ((uint8_t)text[k] & 0xc0) != 0x80;
            }
            continue;
        }
        if (count + (chars > MAX_WORD_CHARS ? 1 : chars) + 1 > cap) return -1;
        if (chars > 0) count += word_pieces(m, word, bytes, chars, ids + count);
        bytes = chars = 0;
        if (kind == BERT_PUNCTUATION) count += word_pieces(m, text, size, 1, ids + count);
    }
    return count;
}

static int add_shape(const struct duet_blend_model *m, const char *name, int32_t *columns, int n) {
    int32_t column = find_text(m, &m->shapes, name, (int)strlen(name));
    if (column >= 0) columns[n++] = column;
    return n;
}

/* Sizes of what read_request writes. */
#define MAX_SHAPES 64
#define MAX_COLUMNS (MAX_SHAPES + 16 + MAX_BUCKETS)
#define MAX_IDS (3 * MAX_TEXT + 2 * SPAN_CHARS * 4 + 1)

/* A request's columns and its spans' subword ids, as blend_features.BlendFeatures.ids reads them:
 * columns: the shape columns (counts[0]: the given ones, then the user turn's signals'), then each
 * part's word columns (counts[1..3]); ids: each span's subword ids (id_counts[0..4]). Returns 0, or
 * -1, -2, -3 as duet_blend_detect.
 *
 * user: the user turn's window (features.window, with a short follow-up's context), UTF-8,
 *   user_chars the whole turn's length in characters; system: the system prompt's head
 *   (SYSTEM_CHARS); tools: the tool results' heads joined by spaces; shapes: the columns of the
 *   request's other shape features (roles, turns, lengths), read in Python from its messages. */
static int read_request(const struct duet_blend_model *m,
                        const char *user, int user_len, int64_t user_chars,
                        const char *system, int system_len, const char *tools, int tools_len,
                        const int32_t *shapes, int n_shapes,
                        int32_t *columns, int32_t *counts, int32_t *ids, int32_t *id_counts) {
    const struct duet_chars *c = &m->chars;
    const char *texts[PARTS] = {user, system, tools};
    const int lens[PARTS] = {user_len, system_len, tools_len};
    int buckets = 0;
    for (int p = 0; p < PARTS; p++) {
        if (lens[p] < 0 || lens[p] > MAX_TEXT) return -3;
        if (!readable(c, texts[p], lens[p])) return -2;
        if (m->parts_size[p] <= 0) return -1;
        buckets += m->parts_size[p];
    }
    if (buckets > MAX_BUCKETS || n_shapes < 0 || n_shapes > MAX_SHAPES || m->programming.n_keys > MAX_PROGRAMMING
        || m->spans != SPANS_READ)
        return -1;

    char folded[2 * MAX_TEXT], name[2 * MAX_TEXT + 16];
    int32_t starts[MAX_TEXT], lengths[MAX_TEXT];
    unsigned char seen[MAX_BUCKETS > MAX_PROGRAMMING ? MAX_BUCKETS : MAX_PROGRAMMING];

    /* The user turn: its signals (features._text_features) and its words and pairs. */
    int folded_len = fold(c, user, user_len, folded, (int)sizeof folded);
    if (folded_len < 0) return -3;
    int count = tokens_of(c, folded, folded_len, starts, lengths);
    int n = 0;
    for (int s = 0; s < n_shapes; s++) columns[n++] = shapes[s];
    int lines = 0, zeros = 0;
    for (int i = 0; i < user_len; i++) lines += user[i] == '\n';
    for (int i = 0; i < folded_len; i++) zeros += folded[i] == '0';
    int programming = 0;
    memset(seen, 0, (size_t)m->programming.n_keys);
    for (int t = 0; t < count && programming < 3; t++) {
        int32_t word = find_text(m, &m->programming, folded + starts[t], lengths[t]);
        if (word >= 0 && word < m->programming.n_keys && !seen[word]) { seen[word] = 1; programming++; }
    }
    int a = 0, b = user_len;
    strip(c, user, &a, &b);
    n = add_shape(m, has_code(c, user, user_len) ? "code:True" : "code:False", columns, n);
    snprintf(name, sizeof name, "lines:%d", magnitude(lines)); n = add_shape(m, name, columns, n);
    snprintf(name, sizeof name, "digits:%d", magnitude(zeros)); n = add_shape(m, name, columns, n);
    snprintf(name, sizeof name, "ulen:%d", magnitude(user_chars)); n = add_shape(m, name, columns, n);
    snprintf(name, sizeof name, "prog:%d", programming); n = add_shape(m, name, columns, n);
    memcpy(name, "first:", 6);
    int first = count > 0 ? lengths[0] : 0;
    if (first > 0) memcpy(name + 6, folded + starts[0], (size_t)first);
    name[6 + first] = '\0';
    n = add_shape(m, name, columns, n);
    n = add_shape(m, b > 0 && user[b - 1] == '?' ? "ask:True" : "ask:False", columns, n);
    counts[0] = n;
    int words = part_columns(m, 0, folded, starts, lengths, count, 1, columns + n, seen);
    counts[1] = words;
    n += words;
    for (int p = 1; p < PARTS; p++) {  /* the system prompt's and the tool results' words, no pairs */
        folded_len = fold(c, texts[p], lens[p], folded, (int)sizeof folded);
        if (folded_len < 0) return -3;
        count = tokens_of(c, folded, folded_len, starts, lengths);
        words = part_columns(m, p, folded, starts, lengths, count, 0, columns + n, seen);
        counts[1 + p] = words;
        n += words;
    }

    /* The spans' subword ids: the window, its instruction, the system prompt, the tool results. */
    char said[2 * SPAN_CHARS * 4 + 1];
    int said_len = instruction(c, user, user_len, said);
    const char *spans[SPANS_READ] = {user, said, system, tools};
    const int span_lens[SPANS_READ] = {user_len, said_len, system_len, tools_len};
    int at = 0;
    for (int s = 0; s < SPANS_READ; s++) {
        id_counts[s] = span_ids(m, spans[s], span_lens[s], ids + at, MAX_IDS - at);
        if (id_counts[s] < 0) return -3;
        at += id_counts[s];
    }
    return 0;
}

/* What duet_blend_read may write (columns, ids), and the most bytes of a character's normalised
 * text (native.py sizes its buffers and builds the character table from these). */
const int32_t duet_blend_sizes[3] = {MAX_COLUMNS, MAX_IDS, MAX_NORMALISED};

/* read_request's answer written out (the tests compare it with Python's reading, column by column
 * and id by id). columns: MAX_COLUMNS, counts: 4, ids: MAX_IDS, id_counts: 4. */
int duet_blend_read(const struct duet_blend_model *m,
                    const char *user, int user_len, int64_t user_chars,
                    const char *system, int system_len, const char *tools, int tools_len,
                    const int32_t *shapes, int n_shapes,
                    int32_t *columns, int32_t *counts, int32_t *ids, int32_t *id_counts) {
    return read_request(m, user, user_len, user_chars, system, system_len, tools, tools_len, shapes, n_shapes,
                        columns, counts, ids, id_counts);
}

/* out[0..tasks): the request's probability per task (uniform where its familiarity is under the
 * model's cut), out[tasks]: its familiarity. Returns 0; -1 a column or id outside the tables;
 * -2 a text with a character the table does not read (or not UTF-8); -3 a text longer than MAX_TEXT.
 * The arguments are read_request's. */
int duet_blend_detect(const struct duet_blend_model *m,
                      const char *user, int user_len, int64_t user_chars,
                      const char *system, int system_len,
                      const char *tools, int tools_len,
                      const int32_t *shapes, int n_shapes,
                      double *out) {
    int32_t columns[MAX_COLUMNS], counts[1 + PARTS], ids[MAX_IDS], id_counts[SPANS_READ];
    int status = read_request(m, user, user_len, user_chars, system, system_len, tools, tools_len, shapes, n_shapes,
                              columns, counts, ids, id_counts);
    if (status < 0) return status;
    double scores[MAX_DIM + 1];
    if (duet_blend_scores(m->weights, m->width, m->tasks, columns, counts, PARTS, m->rows, m->n_rows, m->dim,
                          m->blocks, m->k, m->spans, ids, id_counts, scores) < 0)
        return -1;
    int tasks = m->tasks;
    out[tasks] = scores[tasks];
    if (scores[tasks] < m->familiarity_cut) {  /* unfamiliar: every task alike */
        for (int j = 0; j < tasks; j++) out[j] = 1.0 / tasks;
        return 0;
    }
    double top = scores[0] * m->temperature, total = 0.0;
    for (int j = 1; j < tasks; j++)
        if (scores[j] * m->temperature > top) top = scores[j] * m->temperature;
    for (int j = 0; j < tasks; j++) total += out[j] = exp(scores[j] * m->temperature - top);
    for (int j = 0; j < tasks; j++) out[j] /= total;
    return 0;
}
