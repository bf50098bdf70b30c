# The bitmap pre-tokenizer of the o200k and cl100k patterns for ASCII text,
# and native_pretokens (Core.pretokenize), which runs it or the scalar scanners.
#
# 64 bytes are classified at a time into one bitmap per class (SSE2 on
# x86-64, AVX2 where the CPU has it, chosen at import; 8 bytes at a time
# elsewhere; BPE_SIMD=swar or sse2 caps the choice); the starts of the
# block's pre-tokens then follow from word-wide bit logic over the block, the
# block before it and the one after (the rules below).  A block that holds a
# byte the rules do not cover (a multi-byte character, or a rare case: in
# o200k '/' right after a line break, apostrophes two or three apart) is left
# to the scalar scanner (next_o200k / next_cl100k); the bitmaps take over
# again at the next clean block, from the scalar scanner's last start.  The
# last blocks are classified from a copy padded with zero bytes, and the rules
# read the end of the text as white space ahead (nothing follows a run there)
# and put no start past it.  tests/test_bitscan.py compares the result with
# regex.findall.
# Needs: ctz64 (_bpe_common.pxi); _build_flags, is_cl, next_cl100k, next_o200k,
# next_pretoken, P_CL1, P_CL100K, P_CL2, P_CL2E, P_CL3, P_O200K, Utf8, utf8_of
# (_bpe_scanner.pxi).
#
# The rules on ASCII (bit j = byte j; "start": a pre-token starts there):
# - a letter starts one unless the character before is a letter (o200k: but
#   a lower-to-upper case change starts one) or a prefix: white space other
#   than a line break, or punctuation that starts a run of one (not after a
#   space);
# - a digit starts one at the start of its run and every third digit after
#   (cl100k's variants: every second, or every digit);
# - punctuation starts one at the start of its run unless a space is before;
# - white space: line breaks right after punctuation belong to it; of each
#   run of the rest, the first character, the character after its last line
#   break (cl100k, not its variants without `\s++$`: unless the run ends
#   the text), and the last character
#   before other text start one;
# - an apostrophe followed by s, t, m, d, re, ve or ll (either case) is a
#   contraction: in o200k after a letter, part of the word before it; in
#   cl100k where the apostrophe starts a pre-token, one of its own.  A start
#   follows it.

cdef extern from "_bpe_bitscan.h":
    ctypedef struct bs_cls:
        uint64_t lo, up, d, sp, nl, wn, a, sl, hi
    ctypedef struct bs_iter:
        bs_cls prev, cur, next
        int64_t base
        uint64_t bits
        int64_t next_base
        int64_t scalar_to
        int chained
        uint64_t prev_wp, abs_c, con_c, conin_c
        int64_t dig_r
        uint64_t skip
    void bs_classify_at(const uint8_t *s, int64_t n, int64_t b, bs_cls *c) noexcept nogil
    const char *bs_choose(int most) noexcept nogil
    int bs_block_o200k(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) noexcept nogil
    int bs_block_cl3e(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) noexcept nogil
    int bs_block_cl3(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) noexcept nogil
    int bs_block_cl2(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) noexcept nogil
    int bs_block_cl1(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) noexcept nogil
    int bs_block_cl2e(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) noexcept nogil
    int bs_block_cl1e(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts) noexcept nogil


# BPE_SIMD=swar or sse2 caps the classifier (for tests); the default is the best there is
BITSCAN_KIND = bs_choose({"0": 0, "swar": 0, "sse2": 1}.get(os.environ.get("BPE_SIMD", ""), 2)).decode()


cdef inline void bs_start(bs_iter *it) noexcept nogil:
    memset(it, 0, sizeof(bs_iter))


cdef void bs_reset(bs_iter *it, const uint8_t *s, int64_t n, int64_t b, int64_t i) noexcept nogil:
    """Classify the blocks around b afresh for a scan that resumes at a
    known start i (b <= i < b + 64).  The pre-tokens from i on do not depend
    on the text before i (the patterns look ahead, never behind), so the
    bytes before i count as no character at all."""
    cdef uint64_t m = ((<uint64_t> 1) << (i - b)) - 1
    memset(&it.prev, 0, sizeof(bs_cls))
    it.prev.hi = ~(<uint64_t> 0)
    bs_classify_at(s, n, b, &it.cur)
    bs_classify_at(s, n, b + 64, &it.next)
    it.cur.lo &= ~m
    it.cur.up &= ~m
    it.cur.d &= ~m
    it.cur.sp &= ~m
    it.cur.nl &= ~m
    it.cur.wn &= ~m
    it.cur.a &= ~m
    it.cur.sl &= ~m
    it.cur.hi |= m
    it.skip = m
    it.prev_wp = 0
    it.abs_c = 0
    it.con_c = 0
    it.conin_c = 0
    it.dig_r = i


cdef inline int bs_block_of(bs_iter *it, const uint8_t *s, int64_t n, uint64_t *starts,
                            int which) noexcept nogil:
    """The starts of the block at it.base for the pattern `which`."""
    if which == P_O200K:
        return bs_block_o200k(it, s, n, starts)
    if which == P_CL100K:
        return bs_block_cl3e(it, s, n, starts)
    if which == P_CL3:
        return bs_block_cl3(it, s, n, starts)
    if which == P_CL2:
        return bs_block_cl2(it, s, n, starts)
    if which == P_CL1:
        return bs_block_cl1(it, s, n, starts)
    if which == P_CL2E:
        return bs_block_cl2e(it, s, n, starts)
    return bs_block_cl1e(it, s, n, starts)


cdef int64_t bs_refill(bs_iter *it, const uint8_t *s, int64_t i, int64_t n, int which) noexcept nogil:
    """The end of the pre-token at i when the block's starts are used up:
    the next block's starts, or the scalar scanner."""
    cdef int64_t b
    cdef uint64_t starts
    while True:
        if i < it.scalar_to:
            return next_o200k(s, i, n) if which == P_O200K else next_cl100k(s, i, n, which)
        b = it.next_base
        if i >= b + 64:        # the scalar scanner went past it
            b = i - i % 64
            it.chained = 0
        if b >= n:   # no start after i: the last pre-token ends the text
            return n
        if it.chained:
            it.skip = 0
            it.prev = it.cur
            it.cur = it.next
            bs_classify_at(s, n, b + 64, &it.next)
        else:
            bs_reset(it, s, n, b, i)
        it.base = b
        it.next_base = b + 64
        if bs_block_of(it, s, n, &starts, which) < 0:
            it.scalar_to = b + 64
            it.chained = 0
            continue
        it.chained = 1
        if i >= b:
            starts &= ~((<uint64_t> 2 << (i - b)) - 1) if i - b < 63 else 0
        if starts:
            it.bits = starts & (starts - 1)
            return b + ctz64(starts)


cdef inline int64_t bs_next(bs_iter *it, const uint8_t *s, int64_t i, int64_t n, int which) noexcept nogil:
    """The end of the pre-token of o200k or cl100k (or a variant: `which`)
    that starts at byte i (i: the previous call's result, or 0)."""
    cdef uint64_t b = it.bits
    if b:
        it.bits = b & (b - 1)
        return it.base + ctz64(b)
    return bs_refill(it, s, i, n, which)


cdef list native_pretokens(str text, int which):
    """The pre-tokens of `text` (repaired) by the native scanner `which`
    (Core.pretokenize)."""
    cdef Py_ssize_t i = 0, e
    cdef Utf8 u
    cdef list out = []
    cdef bs_iter bit
    bs_start(&bit)
    _build_flags()
    utf8_of(text, &u)
    try:
        while i < u.len:
            if which == P_O200K or is_cl(which):
                e = bs_next(&bit, u.data, i, u.len, which)
            else:
                e = next_pretoken(which, u.data, i, u.len)
            out.append(PyBytes_FromStringAndSize(<const char *> u.data + i, e - i).decode("utf-8"))
            i = e
        return out
    finally:
        free(u.owned)
