# The native pre-tokenizer of the named patterns (gpt2, cl100k, o200k, words)
# on UTF-8: character classes, one scanner per pattern, str -> UTF-8, and the
# surrogate scan of Core.repair.
# Each scanner returns the end of the pre-token that starts at a byte offset;
# they equal regex.findall on the pattern (the tests compare them).
# Needs: ctz64, le64, PyUnicode_AsUTF8AndSize, PyUnicode_DATA,
# PyUnicode_GET_LENGTH, PyUnicode_IS_ASCII, PyUnicode_KIND (_bpe_common.pxi).

cdef enum: F_L = 1      # \p{L}
cdef enum: F_N = 2      # \p{N}
cdef enum: F_S = 4      # \s
cdef enum: F_U = 8      # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
cdef enum: F_W = 16     # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
cdef enum: F_CASE_S = 32   # matches "s" case-insensitively (s, S, U+017F)

cdef enum: P_NONE = 0
cdef enum: P_GPT2 = 1
cdef enum: P_CL100K = 2
cdef enum: P_O200K = 3
cdef enum: P_WORDS = 4
# GPT-4's pattern as others spell it (see bpe_fallback.gpt4_variant): cl100k's
# scanner with two switches, the longest run of digits and cl100k's `\s++$`
cdef enum: P_CL3 = 5     # Llama 3's, minbpe's: no `\s++$`
cdef enum: P_CL2 = 6     # nanochat's: two digits
cdef enum: P_CL1 = 7     # Qwen's: one digit
cdef enum: P_CL2E = 8    # two digits, `\s++$`
cdef enum: P_CL1E = 9    # one digit, `\s++$`


cdef inline bint is_cl(int which) noexcept nogil:
    """A pattern of cl100k's scanner."""
    return which == P_CL100K or (which >= P_CL3 and which <= P_CL1E)

cdef inline int cl_digits(int which) noexcept nogil:
    """The longest run of digits one pre-token of cl100k's scanner takes (and
    of o200k's: 3)."""
    if which == P_CL1 or which == P_CL1E:
        return 1
    if which == P_CL2 or which == P_CL2E:
        return 2
    return 3

cdef inline bint cl_end(int which) noexcept nogil:
    """Trailing white space is one pre-token (cl100k's `\\s++$`)."""
    return which == P_CL100K or which == P_CL2E or which == P_CL1E

cdef enum: F_MB = 64     # BYTE_FLAGS only: a byte of a multi-byte UTF-8 character

cdef uint8_t *FLAGS = NULL       # code point -> flags
cdef uint8_t BYTE_FLAGS[256]     # UTF-8 byte -> flags (ASCII) or F_MB
_flags_lock = threading.Lock()


def _new_flags_lock():
    """A forked child's own lock: another thread may have held it (building
    FLAGS, which it sets only when whole) when the process forked."""
    global _flags_lock
    _flags_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_new_flags_lock)


# The flags of each class of the reference tables bpe_fallback ships
# (tiktoken's: the named patterns' meaning); a code point's flags are the
# union over the classes it is in.
_CLASS_FLAGS = (("L", F_L), ("N", F_N), ("\\s", F_S), ("Lu", F_U), ("Lt", F_U),
                ("Lm", F_U | F_W), ("Lo", F_U | F_W), ("M", F_U | F_W), ("Ll", F_W),
                ("is", F_CASE_S))


cdef void _build_flags() except *:
    """Classify every code point by the tables bpe_fallback ships (one home
    for both backends: the references', whatever `regex` is installed)."""
    global FLAGS
    cdef uint8_t *table
    cdef uint8_t flags
    cdef Py_ssize_t i, a, b
    with _flags_lock:
        if FLAGS != NULL:
            return
        table = <uint8_t *> calloc(0x110000, 1)
        if table == NULL:
            raise MemoryError()
        for name, value in _CLASS_FLAGS:
            flags = value
            for a, b in _py._unicode_ranges(name):
                for i in range(a, b + 1):
                    table[i] |= flags
        for i in range(256):
            BYTE_FLAGS[i] = table[i] if i < 0x80 else F_MB
        FLAGS = table


# The scanner reads UTF-8: an ASCII str's own buffer, or the text converted
# once (utf8_of).  A pre-token is then a slice of that buffer, handed to the
# encoder without a copy.  BYTE_FLAGS classifies an ASCII byte in one lookup
# and marks the bytes of multi-byte characters (F_MB), which are decoded and
# looked up in FLAGS.  A class is returned as flags | width << 8.

ctypedef fused ch_t:
    uint8_t
    uint16_t
    uint32_t


cdef inline uint32_t mb_class(const uint8_t *s, Py_ssize_t i) noexcept nogil:
    """Flags | width << 8 of the multi-byte character at byte i of valid UTF-8."""
    cdef uint32_t b = s[i]
    if b < 0xE0:
        return FLAGS[((b & 0x1F) << 6) | (s[i + 1] & 0x3F)] | (2 << 8)
    if b < 0xF0:
        return FLAGS[((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)] | (3 << 8)
    return FLAGS[((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6)
                 | (s[i + 3] & 0x3F)] | (4 << 8)

cdef inline uint32_t cls(const uint8_t *s, Py_ssize_t i) noexcept nogil:
    """Flags | width << 8 of the character at byte i."""
    cdef uint32_t f = BYTE_FLAGS[s[i]]
    if f & F_MB:
        return mb_class(s, i)
    return f | (1 << 8)

cdef inline Py_ssize_t prev_start(const uint8_t *s, Py_ssize_t j) noexcept nogil:
    """The start of the character that ends at byte j."""
    j -= 1
    while (s[j] & 0xC0) == 0x80:
        j -= 1
    return j

cdef inline bint is_other(uint32_t f) noexcept nogil:
    return (f & (F_L | F_N | F_S)) == 0

cdef inline bint is_crlf(uint32_t c) noexcept nogil:
    return c == 10 or c == 13

cdef inline Py_ssize_t run_of(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint8_t mask) noexcept nogil:
    """The end of the run of characters in class `mask` from byte i."""
    cdef uint8_t f
    cdef uint32_t x
    while i < n:
        f = BYTE_FLAGS[s[i]]
        if f & mask:
            i += 1
        elif f & F_MB:
            x = mb_class(s, i)
            if not (x & mask):
                break
            i += x >> 8
        else:
            break
    return i

cdef inline Py_ssize_t run_other(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The end of the run of characters that are neither letters, numbers nor white space."""
    cdef uint8_t f
    cdef uint32_t x
    while i < n:
        f = BYTE_FLAGS[s[i]]
        if not (f & (F_L | F_N | F_S | F_MB)):
            i += 1
        elif f & F_MB:
            x = mb_class(s, i)
            if not is_other(x):
                break
            i += x >> 8
        else:
            break
    return i

cdef inline Py_ssize_t lower_is(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, char ch, bint fold) noexcept nogil:
    """The width of the character at i if it is ch (ASCII lowercase), or one
    of its case variants when `fold`; else 0."""
    cdef uint8_t b
    cdef uint32_t x
    if i >= n:
        return 0
    b = s[i]
    if b == <uint8_t> ch:
        return 1
    if not fold:
        return 0
    if b < 0x80:
        return 1 if b == <uint8_t> (ch - 32) else 0
    if ch == c's':
        x = mb_class(s, i)
        if x & F_CASE_S:
            return x >> 8
    return 0

cdef inline Py_ssize_t two(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, char a, char b, bint fold) noexcept nogil:
    cdef Py_ssize_t k = lower_is(s, i, n, a, fold), j
    if not k:
        return 0
    j = lower_is(s, i + k, n, b, fold)
    return k + j if j else 0

cdef Py_ssize_t contraction(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, bint fold) noexcept nogil:
    """Byte length of 's 't 'd 'm 'll 've 're at i (0 if none)."""
    cdef Py_ssize_t k
    if i + 1 >= n or s[i] != 39:
        return 0
    k = lower_is(s, i + 1, n, c's', fold)
    if not k:
        k = lower_is(s, i + 1, n, c't', fold)
    if not k:
        k = lower_is(s, i + 1, n, c'd', fold)
    if not k:
        k = lower_is(s, i + 1, n, c'm', fold)
    if k:
        return 1 + k
    k = two(s, i + 1, n, c'l', c'l', fold)
    if not k:
        k = two(s, i + 1, n, c'v', c'e', fold)
    if not k:
        k = two(s, i + 1, n, c'r', c'e', fold)
    return 1 + k if k else 0

cdef inline Py_ssize_t ws_tail(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """`\\s+(?!\\S)|\\s+` at a white-space character i."""
    cdef Py_ssize_t r = run_of(s, i, n, F_S), q
    if r == n:
        return r
    q = prev_start(s, r)
    return r if q == i else q

cdef inline Py_ssize_t letters_or_contraction(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint32_t x,
                                              bint fold) noexcept nogil:
    """GPT-2 and cl100k at i (x: its class): a run of letters, or a
    contraction; -1: neither."""
    cdef Py_ssize_t k
    if x & F_L:
        return run_of(s, i + (x >> 8), n, F_L)
    if s[i] == 39:
        k = contraction(s, i, n, fold)
        if k:
            return i + k
    return -1

cdef Py_ssize_t next_gpt2_any(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i]
    cdef uint32_t x = cls(s, i), f = x & 0xFF, g
    cdef Py_ssize_t w = x >> 8, e = letters_or_contraction(s, i, n, x, False)
    if e >= 0:
        return e
    if c == 32 and i + 1 < n:
        g = cls(s, i + 1)
        if g & F_L:
            return run_of(s, i + 1 + (g >> 8), n, F_L)
        if g & F_N:
            return run_of(s, i + 1 + (g >> 8), n, F_N)
        if is_other(g):
            return run_other(s, i + 1 + (g >> 8), n)
    if f & F_N:
        return run_of(s, i + w, n, F_N)
    if is_other(f):
        return run_other(s, i + w, n)
    return ws_tail(s, i, n)

cdef inline Py_ssize_t next_words(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint32_t x = cls(s, i)
    cdef Py_ssize_t r
    if x & F_S:
        return run_of(s, i + (x >> 8), n, F_S)
    r = i + (x >> 8)
    while r < n:
        x = cls(s, r)
        if x & F_S:
            return r + (x >> 8)
        r += x >> 8
    return r

cdef inline Py_ssize_t crlf_run(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, bint slash) noexcept nogil:
    cdef uint8_t c
    while i < n:
        c = s[i]
        if not (is_crlf(c) or (slash and c == 47)):
            break
        i += 1
    return i

cdef Py_ssize_t space_cl100k(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, bint plus) noexcept nogil:
    """`\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s` (cl100k), or with [\\r\\n]+ and
    without the `$` branch (o200k: `\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`)."""
    cdef Py_ssize_t r = run_of(s, i, n, F_S), q
    if r == n and not plus:
        return n
    q = r - 1
    while q >= i and not is_crlf(s[q]):  # CR and LF are never part of another character
        q -= 1
    if q >= i:
        return q + 1
    if r == n:
        return n
    q = prev_start(s, r)
    if q > i:
        return q  # two characters or more: all but the last
    return r

cdef inline Py_ssize_t digits_punct_space(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint32_t f,
                                          Py_ssize_t w, int which) noexcept nogil:
    """What cl100k and o200k share after their letter branches: up to three
    digits (cl100k's variants: their number); an optional space, a punctuation
    run and the line breaks after it (and slashes, in o200k); then the
    white-space rules."""
    cdef Py_ssize_t k
    cdef uint32_t x
    cdef int count, most = cl_digits(which)   # (3 for o200k)
    cdef bint o200k = which == P_O200K
    if f & F_N:
        k = i + w
        count = 1
        while k < n and count < most:
            x = cls(s, k)
            if not (x & F_N):
                break
            k += x >> 8
            count += 1
        return k
    if is_other(f):
        return crlf_run(s, run_other(s, i + w, n), n, o200k)
    if s[i] == 32 and i + 1 < n:
        x = cls(s, i + 1)
        if is_other(x):
            return crlf_run(s, run_other(s, i + 1 + (x >> 8), n), n, o200k)
    return space_cl100k(s, i, n, not cl_end(which))

cdef Py_ssize_t next_cl100k_any(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int which) noexcept nogil:
    cdef uint8_t c = s[i]
    cdef uint32_t x = cls(s, i), f = x & 0xFF
    cdef Py_ssize_t w = x >> 8, e = letters_or_contraction(s, i, n, x, True)
    if e >= 0:
        return e
    if not is_crlf(c) and not (f & F_N) and i + w < n:
        x = cls(s, i + w)
        if x & F_L:
            return run_of(s, i + w + (x >> 8), n, F_L)
    return digits_punct_space(s, i, n, f, w, which)

cdef Py_ssize_t last_w(const uint8_t *s, Py_ssize_t k, Py_ssize_t u) noexcept nogil:
    """The start of the last character of [k, u) that is in W, or -1."""
    cdef Py_ssize_t j = u
    while j > k:
        j = prev_start(s, j)
        if cls(s, j) & F_W:
            return j
    return -1

cdef Py_ssize_t o200k_letters(const uint8_t *s, Py_ssize_t k, Py_ssize_t n, bint need_lower) noexcept nogil:
    """Match [U]*[W]+ (need_lower) or [U]+[W]* at k, then the optional
    contraction; return the end, or -1."""
    cdef Py_ssize_t u = run_of(s, k, n, F_U), j, e
    if need_lower:
        if u < n and (cls(s, u) & F_W):
            e = run_of(s, u, n, F_W)
        else:
            j = last_w(s, k, u)
            if j < 0:
                return -1
            e = run_of(s, j, n, F_W)
    else:
        if u == k:
            return -1
        e = run_of(s, u, n, F_W)
    return e + contraction(s, e, n, True)

cdef inline Py_ssize_t o200k_word(const uint8_t *s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
    """[U]*[W]+ at k, else [U]+[W]*, then the optional contraction, where the
    character at k is in U or W (so one of them matches)."""
    cdef Py_ssize_t u = run_of(s, k, n, F_U), e, j
    if u < n and (cls(s, u) & F_W):
        e = run_of(s, u, n, F_W)
    else:
        # [U]* gives back its last character that is in W too (Lm, Lo, marks),
        # else [U]+ alone
        j = last_w(s, k, u)
        e = j + (cls(s, j) >> 8) if j >= 0 else u
    if e < n and s[e] == 39:
        e += contraction(s, e, n, True)
    return e

cdef Py_ssize_t next_o200k_any(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i]
    cdef uint32_t x = cls(s, i), f = x & 0xFF
    cdef Py_ssize_t e, w = x >> 8
    cdef int need
    if f & F_L:
        return o200k_word(s, i, n)  # a letter is never the optional prefix
    if not (f & (F_U | F_W)):
        if not (f & F_N) and not is_crlf(c) and i + w < n and (cls(s, i + w) & (F_U | F_W)):
            return o200k_word(s, i + w, n)
        return digits_punct_space(s, i, n, f, w, P_O200K)
    # a mark: it may be the prefix or start the word; regex's order
    for need in range(1, -1, -1):
        if i + w < n:
            e = o200k_letters(s, i + w, n, need)
            if e >= 0:
                return e
        e = o200k_letters(s, i, n, need)
        if e >= 0:
            return e
    return digits_punct_space(s, i, n, f, w, P_O200K)


# The common cases first, for ASCII: words, digits, punctuation and white
# space that end at an ASCII byte.  Whenever a byte of another script is
# involved (it may be a letter, a digit or a space), the general functions
# above decide.  F_U and F_W: ASCII upper case is in U only, lower case in W only.

cdef inline Py_ssize_t ascii_run(const uint8_t *s, Py_ssize_t k, Py_ssize_t n, uint8_t mask) noexcept nogil:
    while k < n and (BYTE_FLAGS[s[k]] & mask):
        k += 1
    return k

cdef inline uint64_t in_range8(uint64_t x, uint8_t lo, uint8_t hi) noexcept nogil:
    """Bit 7 of each byte of the result: that byte of x is in [lo, hi] (ASCII)."""
    cdef uint64_t y = x & 0x7F7F7F7F7F7F7F7FULL       # no carry from one byte to the next
    cdef uint64_t ones = 0x0101010101010101ULL
    return (y + (0x80 - lo) * ones) & ~(y + (0x7F - hi) * ones) & ~x & 0x8080808080808080ULL

cdef inline Py_ssize_t letters_run(const uint8_t *s, Py_ssize_t k, Py_ssize_t n, int which) noexcept nogil:
    """The end of a run of ASCII lower case (which 1), upper case (2) or either
    (3) letters from k: eight bytes at a time, without a branch per byte."""
    cdef uint64_t x, m
    while k + 8 <= n:
        memcpy(&x, s + k, 8)
        x = le64(x)
        if which == 1:
            m = in_range8(x, 0x61, 0x7A)
        elif which == 2:
            m = in_range8(x, 0x41, 0x5A)
        else:
            m = in_range8(x, 0x61, 0x7A) | in_range8(x, 0x41, 0x5A)
        m = ~m & 0x8080808080808080ULL     # the bytes that end the run
        if m:
            return k + (ctz64(m) >> 3)
        k += 8
    return ascii_run(s, k, n, F_W if which == 1 else (F_U if which == 2 else F_L))

cdef inline Py_ssize_t ascii_other(const uint8_t *s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
    """The end of a run of ASCII punctuation (-1: it ends at a multi-byte character)."""
    while k < n and not (BYTE_FLAGS[s[k]] & (F_L | F_N | F_S | F_MB)):
        k += 1
    return -1 if k < n and s[k] >= 0x80 else k

cdef inline Py_ssize_t ascii_space(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int which) noexcept nogil:
    """The white-space rules of each pattern on a run of ASCII white space
    (-1: it ends at a multi-byte character)."""
    cdef Py_ssize_t e = ascii_run(s, i + 1, n, F_S), q
    if e < n and s[e] >= 0x80:
        return -1
    if which == P_GPT2:
        return e if e == n or e - i == 1 else e - 1
    if e == n and cl_end(which):
        return n                          # \s++$
    q = e - 1
    while q >= i and not is_crlf(s[q]):
        q -= 1
    if q >= i:
        return q + 1                      # up to the last line break
    if e == n:
        return n
    return e - 1 if e - i >= 2 else e     # all but the last, or the one

cdef inline Py_ssize_t o200k_ascii_word(const uint8_t *s, Py_ssize_t k, Py_ssize_t n) noexcept nogil:
    """[A-Z]*[a-z]+ or [A-Z]+ and the contraction at k (-1: a multi-byte character follows)."""
    cdef Py_ssize_t e = letters_run(s, letters_run(s, k, n, 2), n, 1)
    if e < n:
        if s[e] >= 0x80:
            return -1
        if s[e] == 39:
            e += contraction(s, e, n, True)
    return e

cdef inline Py_ssize_t ascii_digits(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int most) noexcept nogil:
    """Up to `most` ASCII digits at i (-1: fewer, and a multi-byte character follows)."""
    cdef Py_ssize_t e = i + 1
    while e < n and e < i + most and (BYTE_FLAGS[s[e]] & F_N):
        e += 1
    return -1 if e < n and e < i + most and s[e] >= 0x80 else e

cdef inline Py_ssize_t ascii_tail(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, uint8_t c, uint8_t f,
                                  uint8_t g, int which) noexcept nogil:
    """cl100k and o200k at an ASCII character that starts no word (c, its
    flags f; g: the flags of the byte after it): a punctuation run and the
    line breaks (and slashes, in o200k) after it, with an optional space
    before it; else the white-space rules.  -1: the general way decides."""
    cdef Py_ssize_t e
    if not (f & F_S):
        e = ascii_other(s, i + 1, n)
    elif c == 32 and not (g & (F_L | F_N | F_S)):
        e = ascii_other(s, i + 2, n)
    else:
        return ascii_space(s, i, n, which)
    return crlf_run(s, e, n, which == P_O200K) if e >= 0 else -1

cdef inline Py_ssize_t next_o200k(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i], f = BYTE_FLAGS[c], g
    cdef Py_ssize_t e = -1
    if f & F_L:
        e = o200k_ascii_word(s, i, n)
    elif f & F_N:
        e = ascii_digits(s, i, n, 3)
    elif not (f & F_MB) and i + 1 < n:
        g = BYTE_FLAGS[s[i + 1]]
        if g & F_MB:
            e = -1
        elif g & F_L and not is_crlf(c):
            e = o200k_ascii_word(s, i + 1, n)   # the optional prefix, then the word
        else:
            e = ascii_tail(s, i, n, c, f, g, P_O200K)
    return e if e >= 0 else next_o200k_any(s, i, n)

cdef inline Py_ssize_t next_cl100k(const uint8_t *s, Py_ssize_t i, Py_ssize_t n, int which) noexcept nogil:
    """cl100k's pre-token at i, or one of its variants' (`which`)."""
    cdef uint8_t c = s[i], f = BYTE_FLAGS[c], g
    cdef Py_ssize_t e = -1
    if f & F_L:
        e = letters_run(s, i + 1, n, 3)
        if e < n and s[e] >= 0x80:
            e = -1
    elif f & F_N:
        e = ascii_digits(s, i, n, cl_digits(which))
    elif not (f & F_MB) and c != 39 and i + 1 < n:   # not an apostrophe: contractions come first
        g = BYTE_FLAGS[s[i + 1]]
        if g & F_MB:
            e = -1
        elif g & F_L and not is_crlf(c):
            e = letters_run(s, i + 2, n, 3)   # the optional prefix, then the letters
            if e < n and s[e] >= 0x80:
                e = -1
        else:
            e = ascii_tail(s, i, n, c, f, g, which)
    return e if e >= 0 else next_cl100k_any(s, i, n, which)

cdef inline Py_ssize_t next_gpt2(const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef uint8_t c = s[i], f = BYTE_FLAGS[c], g
    cdef Py_ssize_t e = -1, k = i
    if not (f & F_MB) and c != 39:
        if c == 32 and i + 1 < n:
            g = BYTE_FLAGS[s[i + 1]]
            if not (g & (F_S | F_MB)):
                k = i + 1          # the optional space before a word, digits or punctuation
                f = g
        if f & F_L:
            e = letters_run(s, k + 1, n, 3)
        elif f & F_N:
            e = ascii_run(s, k + 1, n, F_N)
        elif not (f & F_S):
            e = ascii_other(s, k + 1, n)
        else:
            e = ascii_space(s, i, n, P_GPT2)
        if e >= 0 and e < n and s[e] >= 0x80:
            e = -1
    return e if e >= 0 else next_gpt2_any(s, i, n)


cdef inline Py_ssize_t next_pretoken(int which, const uint8_t *s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The end of the pre-token that starts at byte i."""
    if which == P_O200K:
        return next_o200k(s, i, n)
    if is_cl(which):
        return next_cl100k(s, i, n, which)
    if which == P_GPT2:
        return next_gpt2(s, i, n)
    return next_words(s, i, n)


# ---- str -> UTF-8 --------------------------------------------------------

cdef Py_ssize_t encode_utf8(const ch_t *s, Py_ssize_t n, uint8_t *u) noexcept nogil:
    """Write the UTF-8 of n code points (no surrogates) to u; its length."""
    cdef Py_ssize_t i = 0, m = 0
    cdef uint32_t c
    cdef uint64_t x, y, w
    while i < n:
        # runs of ASCII, a word at a time
        if ch_t is uint8_t:
            if i + 8 <= n:
                memcpy(&x, s + i, 8)
                if (x & 0x8080808080808080ULL) == 0:
                    memcpy(u + m, &x, 8)
                    i += 8
                    m += 8
                    continue
        elif ch_t is uint16_t:
            if i + 8 <= n:
                memcpy(&x, s + i, 8)
                memcpy(&y, s + i + 4, 8)
                if ((x | y) & 0xFF80FF80FF80FF80ULL) == 0:
                    x = le64(x)
                    y = le64(y)
                    w = ((x & 0xFFULL) | ((x >> 8) & 0xFF00ULL) | ((x >> 16) & 0xFF0000ULL)
                         | ((x >> 24) & 0xFF000000ULL) | ((y & 0xFFULL) << 32) | ((y << 24) & 0xFF0000000000ULL)
                         | ((y << 16) & 0xFF000000000000ULL) | ((y << 8) & 0xFF00000000000000ULL))
                    w = le64(w)
                    memcpy(u + m, &w, 8)
                    i += 8
                    m += 8
                    continue
        c = s[i]
        i += 1
        if c < 0x80:
            u[m] = <uint8_t> c
            m += 1
        elif c < 0x800:
            u[m] = <uint8_t> (0xC0 | (c >> 6))
            u[m + 1] = <uint8_t> (0x80 | (c & 0x3F))
            m += 2
        elif c < 0x10000:
            u[m] = <uint8_t> (0xE0 | (c >> 12))
            u[m + 1] = <uint8_t> (0x80 | ((c >> 6) & 0x3F))
            u[m + 2] = <uint8_t> (0x80 | (c & 0x3F))
            m += 3
        else:
            u[m] = <uint8_t> (0xF0 | (c >> 18))
            u[m + 1] = <uint8_t> (0x80 | ((c >> 12) & 0x3F))
            u[m + 2] = <uint8_t> (0x80 | ((c >> 6) & 0x3F))
            u[m + 3] = <uint8_t> (0x80 | (c & 0x3F))
            m += 4
    return m


cdef struct Utf8:
    const uint8_t *data
    Py_ssize_t len
    uint8_t *owned      # what to free (NULL: the str's own ASCII buffer)


cdef str as_str(object text):
    """text as a plain str (a str subclass: the str it holds), else the
    TypeError bpe_fallback's cores raise."""
    if type(text) is str:
        return text
    if isinstance(text, str):
        return str.__str__(text)
    raise TypeError(f"expected str, not {type(text).__name__}")


cdef inline bint utf8_start(uint8_t b) noexcept nogil:
    return (b & 0xC0) != 0x80


cdef Py_ssize_t utf8_offset(const uint8_t *s, Py_ssize_t size, Py_ssize_t chars,
                            Py_ssize_t k) noexcept nogil:
    """Where code point k (0 <= k <= chars) starts in s (`size` bytes holding
    `chars` code points), counted from the nearer end: a stream's cut is a few
    characters before the end of its window."""
    cdef Py_ssize_t b = 0, c = 0   # b: where code point c starts
    if k > chars - k:
        b, c = size, chars
        while c > k:   # back a byte; a start byte is the code point before
            b -= 1
            c -= utf8_start(s[b])
        return b
    while c < k:       # past a start byte and its continuation bytes
        b += 1
        while b < size and not utf8_start(s[b]):
            b += 1
        c += 1
    return b


cdef Py_ssize_t utf8_chars(const uint8_t *s, Py_ssize_t size, Py_ssize_t chars,
                           Py_ssize_t b) noexcept nogil:
    """The code points before byte b (a code point's start, or size) of s
    (`size` bytes, `chars` code points), counted from the nearer end."""
    cdef Py_ssize_t i, c = 0
    if b > size - b:
        for i in range(b, size):
            c += utf8_start(s[i])
        return chars - c
    for i in range(b):
        c += utf8_start(s[i])
    return c


cdef int utf8_of(str text, Utf8 *out, bint keep=False) except -1:
    """The UTF-8 of a str with no surrogates (else UnicodeEncodeError, as
    str.encode): an ASCII str's own buffer; with
    `keep`, the UTF-8 copy CPython keeps with the str (made once, as for any
    library that reads a str as UTF-8: encoding the same str again costs
    nothing); else a converted copy (the GIL released while converting)."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), size = 0
    cdef const char *kept
    out.owned = NULL
    if PyUnicode_IS_ASCII(text):
        out.data = <const uint8_t *> data
        out.len = n
        return 0
    if keep:   # a surrogate raises UnicodeEncodeError, as bpe_fallback's core does
        kept = PyUnicode_AsUTF8AndSize(text, &size)
        if kept == NULL:
            return -1
        out.data = <const uint8_t *> kept
        out.len = size
        return 0
    if (kind == 2 and has_surrogate(<const uint16_t *> data, n)) or (
            kind == 4 and has_surrogate(<const uint32_t *> data, n)):
        text.encode("utf-8")   # raises the UnicodeEncodeError naming it
    out.owned = <uint8_t *> malloc(kind * n + (n if kind < 4 else 0) + 1)  # 2, 3 or 4 bytes a code point at most
    if out.owned == NULL:
        raise MemoryError()
    with nogil:
        if kind == 1:
            out.len = encode_utf8(<const uint8_t *> data, n, out.owned)
        elif kind == 2:
            out.len = encode_utf8(<const uint16_t *> data, n, out.owned)
        else:
            out.len = encode_utf8(<const uint32_t *> data, n, out.owned)
    out.data = out.owned
    return 0


cdef int _which(pattern):
    if pattern == PATTERNS["gpt2"]:
        return P_GPT2
    if pattern == PATTERNS["cl100k"]:
        return P_CL100K
    if pattern == PATTERNS["o200k"]:
        return P_O200K
    if pattern == PATTERNS["words"]:
        return P_WORDS
    variant = _py.gpt4_variant(pattern)
    if variant is not None:
        return _CL_VARIANTS[variant]
    return P_NONE


# (digits, `\s++$`) -> the pattern id
_CL_VARIANTS = {(3, True): P_CL100K, (3, False): P_CL3, (2, False): P_CL2, (1, False): P_CL1,
                (2, True): P_CL2E, (1, True): P_CL1E}


cdef bint has_surrogate(const ch_t *s, Py_ssize_t n) noexcept nogil:
    """Any code point in [0xD800, 0xDFFF]?  Blocks of 256 without a branch per
    code point (the compiler vectorizes the inner loop)."""
    cdef Py_ssize_t i = 0, j, end
    cdef uint32_t acc
    while i < n:
        end = i + 256 if i + 256 < n else n
        acc = 0
        for j in range(i, end):
            acc |= (<uint32_t> s[j] - <uint32_t> 0xD800) < <uint32_t> 0x800
        if acc:
            return True
        i = end
    return False
