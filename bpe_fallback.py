"""bpe_fallback: a byte-level BPE tokenizer in one pure-Python file.

Train a vocabulary on your own corpus, encode and decode text with it, and read
and write the files of GPT-2 (vocab.json + merges.txt), tiktoken and Hugging
Face ``tokenizers``.  This module needs only the standard library and
``regex``; it is the reference implementation of the package ``bpe``, whose
compiled core gives the same merges, vocabulary and ids, only faster.  Copy
this file into a project to vendor the tokenizer.

>>> tok = Tokenizer.train("low lower lowest " * 20, 260, pattern="words")
>>> tok.merges[:2]
[(b'o', b'w'), (b'l', b'ow')]
>>> tok.decode(tok.encode("slowest")) == "slowest"
True

The training rule, exactly (both backends, every entry point):

1. The corpus is split on the special tokens (longest first); special-token
   text never merges.
2. Each piece is split by the pattern into pre-tokens; a pre-token's UTF-8
   bytes are its initial symbols; counting is over the multiset of pre-tokens.
3. Each step takes the adjacent symbol pair with the highest count (every
   adjacent position counts, weighted by the pre-token's count); ties go to the
   greatest ``(left_bytes, right_bytes)``.  A count below ``min_frequency``
   stops training.  Every non-overlapping occurrence is merged, left to right.
4. Training stops at ``vocab_size`` (256 bytes + merges + specials) or when no
   pair is left.  Pairs whose token would exceed ``max_token_bytes`` are never
   chosen.
"""

# Layout: the tokenizer first (patterns, counting, learning merges, encoding a
# pre-token, Core, the Tokenizer's own API), then the extras, each in its own
# section and each a mixin of the final Tokenizer: tiktoken compatibility,
# durable files, file formats, corpus work (train_files, encode_files, workers,
# progress), and the command line.  Modules that only an extra needs are
# imported where they are used, so `import bpe_fallback` stays light.

from __future__ import annotations as _annotations  # (CoreProtocol's, on Python 3.9)

import array as _array
import collections as _collections
import collections.abc as _abc
import heapq as _heapq
import itertools as _itertools
import operator as _operator
import os as _os
import stat as _stat
import sys as _sys
import threading as _threading
import time as _time
import typing as _typing
import warnings as _warnings

import regex as _regex

if _typing.TYPE_CHECKING:  # the names of CoreProtocol's annotations
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any, Literal

__all__ = ["Tokenizer", "Core", "CoreProtocol", "count_pretokens", "get_encoding", "PATTERNS",
           "BACKEND", "__version__", "resolve_pattern", "pretokenizer", "token_to_str",
           "str_to_token", "file_cuts", "read_jsonl", "ProgressBar", "main", "UnknownTokenError",
           "Encoding", "encoding_for_model", "encoding_name_for_model", "list_encoding_names",
           "patch_tiktoken", "unpatch_tiktoken", "Pipeline", "pattern_program", "FileSet",
           "gpt4_variant", "SPECIAL_TOKENS"]

__version__ = "0.1.0"
BACKEND = "python"


# ==========================================================================
# THE TOKENIZER
# ==========================================================================

# --------------------------------------------------------------------------
# Pre-tokenization patterns
# --------------------------------------------------------------------------


PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "cl100k": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "words": r"""\S+\s?|\s+""",
    "bytes": r"""[\s\S]+""",
    # the open models' pre-tokenizers (their published pattern strings, as data)
    "llama3": (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
               r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""),
    "qwen2": (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
              r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""),
    "nanochat": (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}"""
                 r"""| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"""),
    # "deepseek_v3", a pipeline of splits, is added below Pipeline
}


# Where a file may be cut without changing its pre-tokens: a place no
# pre-token spans, whose left part ends the same way at the end of the text.
# GPT-2: after printable ASCII that a line break follows (a run of letters,
# digits or punctuation stops at white space).  cl100k/o200k: the same after an
# ASCII letter or digit only (their punctuation runs take the line breaks
# along).  words: after a line feed that printable ASCII follows.  Custom
# patterns of the GPT family: between an ASCII letter or digit and a line feed
# where _custom_cut finds that safe; other custom patterns and "bytes" are
# never cut inside a file.
_FILE_CUTS = {
    PATTERNS["gpt2"]: _regex.compile(rb"[\x21-\x7e](?=[\r\n])"),
    PATTERNS["cl100k"]: _regex.compile(rb"[0-9A-Za-z](?=[\r\n])"),
    PATTERNS["o200k"]: _regex.compile(rb"[0-9A-Za-z](?=[\r\n])"),
    PATTERNS["words"]: _regex.compile(rb"\n(?=[\x21-\x7e])"),
}


# Unicode normalization as tokenizers applies a tokenizer.json's normalizers:
# its own data (the Unicode version of its Rust crate, not Python's), probed
# from tokenizers code point by code point by tools/normalization_tables.py
# and shipped here, so that NFC, NFD, NFKC and NFKD give tokenizers' text on
# both backends whatever Python is installed.  The data, once decompressed:
# four lines of ";"-separated entries, code points in hex, each entry's first
# number the distance from the one before: the canonical decompositions (in
# full, Hangul syllables left out: they are computed), the compatibility
# decompositions where they differ, runs of canonical combining classes
# (distance:count:class), and the composition exclusions among the
# decompositions of two characters or more.
# BEGIN normalization data (tools/normalization_tables.py)
_NORM_REFERENCE = "tokenizers 0.23.3 (unicode-normalization-alignments 0.1.12, Unicode 9.0.0)"
_NORM_DATA = (
    "c-rlKYnCjlj^6(sMGYZ%L)K`3h?xHn4EiKcWLE8aPG7s-ZJ$-O0wG=kga9GPe!RT-a>wy)02l$R08W4`K>fBa@4l"
    "Q(6B8tPkmNy<2T4^VPLVi8;uMNAGQ6a$TO!{Q`IgAHj+4LLD@f@<N)J+ckkSJRb+0HjjZ)JnHH}i!C^d~z(<n8KQ"
    "dX3*qLdY-tSB{&Qqw3kjZ)JnHH}i!C^d~z(|GGRv!+Q(Pf~i4(vy^)P^bm4`pZjoykMeWB4eynnSj~3php10SixA"
    "qB*7%Xbiqu(d%*y3U<ofR=7mY3V4`4FgA0#=LIEgFmpD{b5()(%OcYEMOcG3Dj1>&{IZHkO99Yyz4?1C5FBmVFD4"
    "56?D=cBxC`jM_<*O7SfNw$ufH54pbb$a9gE#_EoGx+tcfcT`R02#4QVBqDy2R;|o?EIT0AZqFqF|a}+8laT_)vg}"
    "p(2t16sJp^2?XJ&BtQ_3N&*BKaY=w69F+tJUg8K4gxQiX8%Y2s1H_3;@PhGziGqoOse-A3X@Y5tp*~Fl1mU_QK#+"
    "l-ipEgnDvcljVUl2yV7g%Xx3$y<M*3g?7tvvavI(3R-(ALc7ryJln_W7yOJ{beVwWl|OxDenb(3W+gtC^sS?84Bb"
    "31g%F&W*ctfTf&NYWwV>5+j8fWye{GO{}lDPWqaHAbWWz$oTl9@8WrTZDCEmGP2flqH^7XiOb4rq*Oy^)w?MBHjq"
    "`6F8;)?yP6vTT<SPF_M>A)9fuG@MesWdC9D4_Li={8DnH#GHZ6dg&A(f7@3ZYjBE-@0!)mN(Qj7g-_pG|V~j9~k+"
    "E*0jO-}mILbJVvn_>ZB7nq<u$Vw51eqcr)o#s3+Ji-d4skjp33la@bX@TSk@Sgy<9wl~G2=Sp2u2UO<7Hd<t}oXH"
    "{Z+cv6<K(+MBcCh(t>0TcjXqSu6R|J6|R*%@G2+E6h&48u9+2iWzf<i1A=;ZWYtzyeP?w)A_GDO;pI-50RW9fP9L"
    "4N7KSFs8qYxJk0EqK!i_1*)W!57AiQ-Xj2q+Pw;k(L2ha?La4T=O@^&llu<~{*Z@2RH$lK&Gj=gX^^Q^C<#3)mq1"
    "9T1Cv2Y6_Twb`jMng^GqKnv>MmNPf_o^(ev<ot6;nK=)F|pfHapmV0WUhs~B<;0AuT`!+1@a5BYdH7?5iT#>j@K5"
    "BAiHSxi)Pyvjv-rKam0*)7EuJz_!=XfA;Ja1Rl=3}if15jESS4N#1TFijF2I|%8=H@_3!*DqX#DB2IL5`{#8b2Ow"
    "bG{E+{Ri3uMiL?1I{YZh~Tel|B-;Ya%Cfjv;)!N*$>i#jKVfJD{7O;9u3*uS%5F(OVO;103{J%DoPH1nLrTls%!V"
    "zS?Nj7A6-F<Yw8xQQ2)!-Y9h&luyW|R~z$H8??FjYGbNtL~t7f3lu3h^;h@ttB>4Me)TcF`x%C;>LYwYhM_U^0Cg"
    "+4ZV~r>og;^ns5%E#0u9`tFJG^7F#Or)9tzMLX$%pbedoZ(@VdSIx`$k>1L_0~TrdlY3u*+NBi=EfFjJ%vFWFHNp"
    "vhEs8~NqA#JHOys33GeW+2NduB_tfDz2{L>ME|FxOl$IVZ+z>T;KIN#$w?ZzUIOxYrsjtMZrzMCtyEdV;EnCX9%n"
    "n$#uYP!WZDVGI95gGujMr!^+PF*~bMMpEAJ-FfrCKhJcB2hA~d|dN!#Y;PTLZF3El_F$VbwFfqta052=_C;(wj!J"
    "M*~@p^ylwOYaJ4YyZ%2ILY{E>3cA$66?;9p>`*D0PWyFNld>09uM9S&GQ+5cL(ni<pf|-e#$9R(nc&3FhKum=isL"
    "TdI+)l?H1u*aX`Y22=<zF;3#RwOw?wU33d0b=002;$*YAQ=bx#+V&JG1RzWjOkxbm6o3}Svi&?{`-wQ0isNL{>ei"
    "<9lsKne#2LMaGdd*e5Lw-Cp3<HbVsr>CP!HMH92%1Zvo^J|&0QF(N)iAVSu$!*kYSbt2%<nq0?;zq$uilkZL^MNR"
    "NSNMkp9R;g)C2y;hVg|phN+J4BsR`kinV+plz`153TGCo$T?PDCUqVs8p-_lJ*1{-g#}&Wyc(4D=)yrSiykeB>PJ"
    "Nf(Wi8K#&DX5+H~wC<!nz$XS3O!#@cSWU!~KwTwwN2x|v#We0B=gPaAJ7$=$l41%oMeUn-x=Q*94gbho8%on|-U8"
    ">q5o29bUxetx!L(!|1qE>HTt<K55=jL>Xlx&?+s4fq5j+%m~DTtbas40k=f~YBonu7RFLDUq8P7&=S0L?2!=9D5B"
    "iF2$t_Mz;3=(zQKW%Ybzb>3FzZ*>_~m9tw;duUcDG9whxD~dMKiZa}au6SXPN&u+PA6n*za$QSFtEHsXIobEzoDS"
    "KvC?)o;3F)j91<SKS4jppnkfKA14sklfsSv9}tSJAir~?;<vP%L$p{8Wh@~n_Uha5Vj=#WQlPKP)ZVs!{;k`sg^K"
    "#-13MaL-;rwB&k3?O0m52XY_enF1&W&FeEmUckGj1Kcwhrw4?Ic1eo9_5rrIptAKd6ZKg<&;M`Q-{Iz39CNgQJ?U"
    "rPk7WPta2O_FHG~wt32{5kG#qwuky%iYE+o6wCG9?y3&KL^q?y}+BrSiIX&8Wl~YzZ<xx&~lv5t%lt($`QBHZ3Gu"
    "1y_pR(#x9`z}Y`jkg~%A-EzQJ?at&nl;^a>}Ee@+hY~$|;X>%A=g}C}*m!xIXu)&;6*+{ix6VsL%c2o0V5td6h?A"
    "<&jr;<W(Md^~HmI@nC=OV1MvnfAC-ry8aS|8cUeBqC7NyL#%h-KBIk{!|I#9`ldhnra$_oKl-LW`ldhnra$_ou5#"
    ")sr#{N5k8<jxocbuIKFX<29xz(UDV^x?gLd@zK~H)-HKy&>+@cht#}6vfLn%w0lBMAxOT$w>zlXnJcn9zn$Gpdxo"
    "BOwN7N$JtC=WWy2OZ^uj`BfA`JkhG&{00<STZj>WL|j6(f9B-%(FexM|-4?_DCP?@t~tT=qMj_ln*+}2OZ^uj`Bf"
    "A`JiKsm+%-b;W-B1!{0CuI`(+{D8qh~voQ5RM}5#yKj^3*bkq+z>IWV5gO2(^M-w{*Kz@&B9Ye*1&oX|E|0fS3$F"
    "g!PMz2ryYJ_ttQ!$(M#QbEy4XNUjj<1RjdRd{)e~!14Aj#L<OWrVO7Px0tZlki=sHh`XeO%<=Qz^5aIk{z4KBedx"
    "m}U!e-`67Oz7|0f+*1%T>T=S)kC~45L#N?ei^y*DWT<jmMAnseU3u5lrs}Lra;j43I*5x0&A{b-+-zufV=sE{Qr&"
    "p#SzaB_9nXWhD*3i~P;C#|4Gm}1)`l58kF46Zt%~={nli|8bMrqy3(!s21D;XN9p&^JL~Ivc)=s^Oo9AEy%s@}DA"
    "#xtDMGQN^0CXF$>npZ*8w@M5M|NgxGtPya8}0$l4E)IiaZUrcghU(t2E)od*@aEJ%&FWFY$7mCux@Nyar4e0?;P^"
    "ZAtMJn(RD|zd4pwxoG}&BcX{Umi`k%Ew6&daa~s@sZd~U+&yT5Tj<JPHZ8Tv$k$XtTz>?m#l*xk!=~@N8Hyn(Doq"
    "~gclY)zaRsKQcA5{L4^LG>W3Lh1m0jCLbTC?CvaY$9lc)*Mg3Lg|cD|}Y?rtl5;$%Th!g6e<^SLPaURh6u&l2ui*"
    "sYYz75u0knrW&!SMr<nort)tp|E?Obt48dq5xZ){t{SncMm$v`o~jW~)rhBR#8WlmsT%QAjd<!ttZ@^1DI)Ge!A8"
    "MMke@JDzURZfa`&W;kN1?n`J%(V+&dw!6FPneTd!-%#&Vawolt_IGujiHmrUx^f;`Pl<{~kY0_4s!d5&%#F6Pvzp"
    "nT7m<;Y~#QlX4GVJLN+l+K;=7$$pn;(&OjE9C}d8I&bDOlz#er{p=33cFlpCJ$$T&g!DD&}UdK5og+c7L?7Ii6lc"
    "7F=&aH49-oc*ko_2`_buS=+0ypV;W8th|cIc<ylXhG8j@2#cM{%2hB4%(wvxMn3?7Cn&p*5ja*tJ-+5DcIg@=>No"
    "1{a)|pv$L~g-+S}qF9^(0#INyOi1i5@AzkuIVol8QS^7gKrhhLW7>9(shaqruV8NlkFWR_L_kTrN>Mng~awEtQbT"
    "XHMb?(_sx~$T{gWJ3H#J5~-_l%LiIs^?R=O1$HAnS)(?Khk?Z*aaJ1gmO9)($A8moJeF5f=}P*>>%eJPhtX-uARd"
    "g;aYzuTK@z&dd+PpLskRM_c{d`kXX0c_lx0gJAi4_8Vx*JXs}h45;_^{<(tr*wq7Fd6+sJ)nVb1`wtUJ(AjfcTuB"
    "Fe4{RCg-qreagE#PgvNLsyJ|t582&#EQWdvNnvJ^yw{8u{ZT*xDw3r3Yr|sTVK$(P*)mig5)z)mBb<Ggh)6*{7tr"
    "B*<WN<aZtMAJXu{@gAq`19M$L$>F5|v-R{;Mql#MTzR{40sBYAPsgqSg!eAcd&?!~C6*GjBI%n_%EKD1*hG+RgHO"
    "gatA!88d!QSLcB#=rrIBg_uO@)drrXgmdo<1%XEHs=B8UdqpYUJ)<#78ofnKl{ffE1}4vu6R3AR{xeVk9Oi(W0xU"
    "kz+#L(~Y6#ajaTk7Rw6iKu(TC?n$DgfOiMGQP!679HWYc?_p^eo`y;|FK{w(Pe7%k@x%-n0|=w4MAUYyj;Q}&64;"
    "5oV}vY79;f1!TB*}O7<9rO_o9}#Q$dFlzvK%O0}aCxFN{C5;6>dSydg#z>to8S5WfVHd?gYul^($5h0>)0VcbcGn"
    "~R2aCEr+;Q7*j@Ew+;n(_d}@)>R$y)1kHwyo(dStJ27^5ZfKnw9%9`<|C?mBu2@%qtdfS#XM#b2*8Vy2jg+t(C6l"
    "5NE^DGFq&}s%n2^1UP%!{4HitPKrR((`BX9{hCq$nNsOj@46ZS2M>92sLt@UQb2%Jl(fb?|e94$lGFY*Y{cJhG<;"
    "MwrX|SP$=sGaC3{@pyHVhWy&jn2Eg~Bj%g~8DzMo~@h#NZbXhZ^fB5IPYnfqY>>fMYX{aYQ^ZRtGpt<+e_+K`<<y"
    "FvcP#Fk<iIfy|U{G#%Ou5)3Pk(U3ToLDQ9RqCMH61eJ(S6@t2fUm)_*h4FXMpiI+Ti6-v=uA>gOV0LyqvFV_Q7_1"
    "Z$l?~HNqv<SnVvT&#Mq*4aB$v43;zi7!Zgd<mSUgA$T5m7RJqEUdme(8sQh){8fer)`KHDLb@2Wa5knLW82n*-|V"
    "$kU{oLG5S(UQGisF*_<Oy{o?Gs+1mjw$b^c_|(zx*CGQ9FLBVhw6XG=IF3e@&@-#0(gVEj0VeIeI?k^V<ZgTEqkI"
    "~lJle}S8s}M4jQ<^KB>YKgp9M2t+yJ7KH(UV1se50ijYr{7KAcX<B2eEN}>sHI0u$iSok!}Q$0a^ho(5}Cax8pa#"
    "Z*1E-a0~Q-vxvBui90RU1|kv~120eZpv1KIIAqWwvX%YPMrRk+2XUE+}K`jya@jUJRHxskVzV$(EEEv@}|o@kU_m"
    "*{La}J8Nj2JE3VK#`6cJ-h-&J!FsrzWWP-ioaOd#2G@8$CbIGs+B^^mWB(F{%xZ)82CkD#BFGBVy2g`_!p?(I3X~"
    "VrF;y<eF32s&FDNW15;SNU8#Td|1=R($1@)EU66jhKTxQ``xtCwKxNvDftK4gqd({V}W!3FowA?G_0R`V*#*FFlY"
    "kV77stjLa-#vXburIseHO>sLAtSlzv+T2GX5@Sten(8bd{ZXInU!y|7*FGM`wl8peCPK)Ga4N<yn)8%^cD7v!9J)"
    "sO&B?!hUUlV%Rl+(d;NgBKXJ63c*mI^aP~W-iJTPeB3pg<$|nI5<AE!mL_OjSoQ?jNTcHy>BCKCXBG|Dbf|*7<_9"
    "Q+wL9_ya(lQ*0L^{?#GQl6TGIPFMlug6}h^Ku6d2cX_8=8jg5lA>Y4~{Ys3k8};M<DiqrT|+#7FpN>*1qQ{TMYK4"
    "274Y$1`y5zX&ttb9?LS4O~avk7lSN4mpzsyJhM5Hp@FZ2VP_Z|$ro9@I81O3dn}huIQNHRk7`MTAH2`(NO&T!MPx"
    "uqgn%7wz#=%HRfDIl8oN3;SSa~Qb@DfEtr@Hi1I$a1=U7Z>hv(;tD{PpUS)h&SOfAJQLyoN|(Sm7H*0dShmV_;0q"
    "M0XT+8&Q>F=d^h+Q~2*%+zUiOyP)nBM>Trf&vSz%tFD2y3q2#npmOKju%2{8yhOk+o9stUxALHMmiCQM4XGXN(~K"
    "`c`%%3$C}cC#jd>}J#PgYZJexW2G|>$77%%(Z95U^60Pw9v?07e4ZXt$ULLD*4~g&C8zJnWJc`&?B}iD>*$js=&l"
    "V!~re?i(o#f!71(M5Xq_Kh{w$I4sA`QcEu<@q_A#0t+M!H~Pqbc25*cpnOE$p1I%3;T48Y9+On&a$PykOsl1>8+l"
    "aG7TJfW30KNeve6GhtIs>#8H;OpBz0D_EUjIdAP)Zjra+k{9dweAg>K_K^fy3%~|b!-`!&#f`aB?+TzTjL?`xDDk"
    "2V*yc9ay`ywTtNXDV;5*C?ac=mq<8aj0(Osas-7s{wxEbA9k3-#4Vekz#Li7o~0;_k3p&Gm1xRB4fgKRy=KE^?V3"
    "PmbO9@nr3$L7X0zVHPmGw57Xh>8S-Or&L0K4>xR-C2HE|5{vSq+Q~09M)MKCNmx>Zm2D>o61;JV{bK<-B222^a&K"
    "5gF?U8X|Z_RfUhuIq~RPZMz_PJJXTs1x=tf6HloV9TyZTr;7Ab6&`6rchW$G)*&9t&WB)B<?_fV@M^fv0!;NWLxy"
    "0U~){9U9kPwWx$Re9Y-U^)P$dhy;@#MPmCjP|U<FZgh(D-(zb87Q&@j!z1JDwO8cLY^;U>A*elg2G!T`L=ogZgXq"
    "A;PdnI1<!i2`1{5=TN%-k+5|eo4p8q9M;s{(F8CyzFF^F!2UkM=GfA9FWG_|l7pM6Ta%+<m>h|FcU36PDlN^gmba"
    "6<hn;!oYD45R6g?!C#)O9(%w#}reRsTDy5NQC1uEJh?FzO{2Griwz=e1U2W=DFO{3Q1e2sTiBM`!UxFk7)G1x8`2"
    "WxLMbHc_<9BO9XVI<6N9@;>EP)}IVIA!86(XM0H=8p?yMjN;8V0cMX4!0|%Oez=7fuR!@T>?6~l9aHakes)n(!dZ"
    "mRhsy`#p!Zr=;8)GYP7-`VhTw*`nJ=y+gs?JJM><i=uIby4;ye8kxpVD&t|bFv2wbgs=SEFyrUstBe-g~9&bXBws"
    "ClI>~a(141R=u<tFwT`@p*Qtz(UPB2plAa6V{;9bS?b8H=bPp~4NBMw{J(rh;r>1MCmz@-XpNEEglT>cfTKjoFCZ"
    "zURN;Kp{sfFYjrF%eEjavky8gnq)Jkk-U7+<j_=aBkt$1j(;qOD9}-JW>?`uH60Q<DEC?S;{w8Py5fkZvZDhL8!="
    "MG>`62ZKQ)C9q|nO##yJEreGVkrY~q|kL~q@+F!dqe`cyQ)QjKgnz##!`5J^JF0aGNAnQ;u4V}(OH>6{MI89+TNn"
    "ulZ&hRjliSw1Zia-zjg&TLzML*<Kerc8}x6Bn3IcBp$I$)%i$fyRb{8X{%dyx3GCZhAGuCAQ5K=Ut-EfF`4p2Fs="
    "n9_uuG#t<g5aB`S2AJ}wTtlKjfh4sc~!@1jiAQ0z^*Xg&0#O6Q^I$SEeVEt1L9AX)|B5y}S;RJz7Ef&fZOVu6@e9"
    ")>mYN+CAJ2Q9_O6~w5RcLG#s3|N{KlT$)%V6<)(x@qkIB@Vd=8Ix!HSQ}-PQF5uGsZgw`U8QKba+V!E+q~-r1Kw>"
    "2NaU|!XqanXG@{LQfM@mf)m4nQ@TdG3R@c89TH_wCrMa3t%iNaIcY~5p2QYIh%uJdOST%wl4^++hf4!^2v};H6MC"
    "o%?T7VnxeuH~(?LbKX}}cd<!z0}@gMaV9s8ZfM_%%ox8KP(mGHFbp(@&A8H#qY`QdwjxZrcsa{*sN&P+QuLbC@Mt"
    "dQjAZ4VOvv3$k)-RHf$#&5t3x4dlYU!#{?9MkW&5A$Z_dN^djsqP1O7CiF6q}IP8mPT;>#rTWy<XX;DGL+1|+xdz"
    "R^|WZhNj8QZeW~4`2gkLjd5Pc3^?56|=?JI{VD32hE&~DcsTr(aB32nRxq`dCOQcAC-T_{Xj_$!@0PTh2JlFVbgf"
    "|nh^}s=gvD$$b5Gq!p^d%$ef>#jcja@gFtNEI{<FAnI_jTd^dRlkd0ricm1f|wqmp{Lz;X^)NS0CUY&X(6z+t)>#"
    "bAra2#@?@cR6RCaW9Dnie3e-)F;5lRG3J8q<||(Gv<OY;^ECuKtu(bjw4%ghj8}+g^wMA>CZO>^-9FQiXu}Q=`hH"
    "R|kfMM#__U|ODhg{SQZ&KBf<AcM2}>0$MX=_e{lgqHv>KiT8V{{H)=*GbML1Z@(i)K#f54uYoM=f$7z<r6I+*t>s"
    "xyh$B78}?r1+kKds$Lkb45WWV%X$h^){12u%jYa#NF5tV{t-Xj0dcENH2L}7!;6BwdSn@tz&KCiI%<?J(%ridd67"
    "|xIJU$n4zX(Y*9HG<<N#2%M*(QD2=HCnQb7}c_5r^UXHUk`r|vH*3!5!?t1|kN#3d<H9Vbz+0b!$jPi_V7d&1^^E"
    "#SW(Uw)H8oKv$K+_Edi#UJplcsL-_=cny;`w~h{A#bS?M|@F$bNjB{hA+2%`gy?02d}45C|BEF%gV5HQan-Dk)<d"
    "@<k`p!^LjaO#k(kE%MGp?=-3c(~jwcSeZDSn3E<D5<}GQ4cj5=Q{pbjM3URzoDa=6ds_NW=4dhEad3Yx@f%>0LR)"
    "W<&d>y0YxLqq@!*+YzlJAdV!Zn+^3}}&ChRPxeeCh&9Uk19QEt3GFr(1;FH`=_IC#=+$+Pt#T5y&CAy-7c#ZC_l^"
    "4xaM19Kd0E(ymUH!n>?bM3!;`11VJn4ibvV-EEAcszhNX$>N0{d_5dl18ZR4xE<Y6bL6k=vq799`NQXWSMeA78P8"
    "D;hpYWT)?hk$yDed>a-G+HAB)1h@w5yP*3|QbE`cP5_Cw=ixBd7?U6LZK|y;YB<l>ajz*rOJxH^A>}$IV4A4yD&N"
    "nphafJ)GW5b95ceD{D@9-|nhC<KPrel4z+y$m6Q$~tFlKTXA>?~s=WsZ_}c$e7(y?K(Q>gtR-ZIW&KvX+M-!$6RI"
    "_BCNBZW#u`j@kcj4RpmANN0HEX%<_^vQ)ZUI#{?(IuH3-<ToEr8~s@rv>S9A^cxHtj2lcF%o{8loYX&j=HasspL_"
    "WH!xtXD`0%BNFF$-m*HLJhR9rlaE*=0E51xz10FEZuP3&fN3%jVEfM$bsgKmR<gJFYlgK2|#gJn@GrH$&u-I8%PW"
    "87^RcLT=VdT}>h-0c>3qs84~v2L(!uy63(;I+YffoXSs+VrMPZ`$;xO>f%trcH0!^rlU3+Vm!-mzLKe_KjLzLlgL"
    "yR@Vlr>-VY0Jy+OKmf4VDB*3byx}$wcksymv=&!SyB7UBhF@MwCY}UfqJr>%KcWKG8B8$l}$b+?SvIznz=GS~`ZT"
    "z3KdQk2J?GZuJsNFqsIA>*s*ov*6^OdY}kJa!wjcn=c8OL4zBB?VR((_#bcDNaKoV3RES49F?{uzhk;K)`?I7iNW"
    "ECLHBoPC<>cpMxb+uAi)*oHcs5jz}A;_^mto=<-9lqoEg9Gi>dtj*zc(cwre;t&kV<dAX1Tlh6lJT6*LP~qcDoF+"
    "GL2@IM;yI~8*CY0Eob(i(QW5P<~#F-+g8^ejS<dgIp;Yw_{3!7P-P+vH|g$g9xc-{0iIL`wScf`3MD7!nJkAfwZb"
    "vRzbRxaTDBj7XyX8SR~yfWaB4pt;FTzEJGrq7Y~Rxu$@C<-G?FJlAGFY_!sdxSHUhLgJnD=jon>;~I!A|f4;&pM!"
    "=z}W(91BQbqEpbGF1#QBHHCaB>$T;tS39~<OigDqD!r+-2925k850+oQfiZBv;YH*%1kP$A43lHSPWHm70}Q|tj9"
    "y{Cn{Zm13XW3n_FSqMs%)TIiCa_0Acpp9q^9!j082yKB9e{gzAbPZI2bgrLUhoy!|MOYxVb<qJRH)H8t9SD&AM_p"
    "(2QDYf@~vf3SrrZeQRb@))?8o_1I>vtlG_m4oBJAH5VBFR~nSL(~={1lC!L)%^g{H+E(W?LJvz~EuT=sU(n$4&6A"
    "skHk;q)oAm$XfJzWn>cx->KrD-K^P~ilgC)=~EYZN04NA>OoLnNEo0NnbD>y|hDMGJG0-~f2b2lg~(YFP<?gBH{l"
    "3@{tixvfDdBb5vDV`TZ%zCmzF&n8sh65kp_Q1=9jpmI4tLk#4urGF$tA?!(Ef<aH;oxoy>b{htC$yr_ks6rN(b#0"
    "=Xt`;^D|fKlJbhj084}vIxw&<5K9xFm(MycNCUmOrBJcgF#(*kaL(25NQvHsHT+SNu)sbNt8Ce-zJv9|(U?f=$%!"
    "Gz>0_os*IJBEI4apmlH>7Kb*$}fKrs1q39N4Ons4~VPIa&5j>ozzI4v09I2w1Tlut75@-5|L^=@GujKF|_D3#`FR"
    "1Q8KLV8@F)A_jMu45q!|pmgY**hq}+!q`5IP0~z4c?snul$W?XrV~g5WJl>8rFRt6QNoE_PDD9DnL(5jw4B@o@EN"
    "4DD9C~qi(J?)&>|O$idkf4k=$}}<mr&yp_M%H^vJ~{-Hl4$h#3$TP?dm!GHRPq+l;V+bOq@Oq7;-~>DgIXz3|cm@"
    "AAN~cle-L$76OEza~!Pu9c19i$(^^0ZN|STHr)lkWRi|tJBHv+T*k*XiwChq&-D@n)Y<<xwPk29;3-IMtdH#9bc2"
    "dpQOKI+y^FnVB!ZRePGH5rhQ=g2j=>~-0v9kQH%L{=NrcUT-NnLPg!BJnzj8H0ohSvJHsZMt%#G^lt*>uWIPp8_D"
    "*PC^3iFW4$*1Cjy5H>+T<N-uXH^2acYY_*Kx};C)AzWSPrX=<fXQf*;ZYS+K3gm8!-6eR9io_U(3C!O<~bhn0K&u"
    "<t|lipLQdLrna+VakiuR`!K4Uo>c1uwb3lPd2cl$=1NL=Zq7Qu{%b7A`(8DtmhbN}AD<*eByZIXyOv$n=s{a!mmU"
    "w=8q3-m%i0>t+8W2&AIJH*b?%7#9Ovhd-=1jgV=@gtO^W5G`R`v(d@LNe7zH~82L(q3Cj}P;HwAYEUkbiAY!nSVs"
    "F}o%wBys#l4(U1ammo-SrkOj!P*~ZhvN6`yE!EH{&fz+z4PQP67OnwkHZ@#xh;*orfjXUh2<VU7YBnFPivCI*Nl2"
    "K`##egCgeMLJEL}`<>1?>mJOeAnH3A*OdK&89@}kf*I+mF)9e@67}njeeulYrgVlG7*f3pq(GOde4s&e>WeH43Cz"
    "nQc6T7T`2Df|WcF)`{r|hBvmm~PC>qdT}Sr<jMDA&W%opN7{aV3yjkY7+(P+U-2P+m}35Geqa$7s(gjLw<yT4b^d"
    "B<+#!Bs8d62ib@ZhkX$ao}H-B>d;Qf!E|swj6e>pi|2|PPJol(;P!t*x`uQO>2RESbd-l<RovMf4$A9DN9)GnAbG"
    "#|xdVRPfFCp9w+r~G0yv0yBIbpkV7O2$jHizarC%uhLh=h#Um)T_W*3OKK*V+Pa|is=0Y7qp2P5cbK=2yF{H=igw"
    "dzGd*L+BUUSFtYWA7<#`R#?T-5XYNU@|KGWKEL<RlU7HL4@U|rAHd*d70aBZ+`Kc6qJrBQ#oY8(qkBR=gyaWxjXB"
    "s7Pl$IrsA)<5%gmM-Kp9W_M~Vkd%Q6rK|<=nqG2xPJi%7=GR4MrO*R!2-b-6?sT=t5jrUZihIcbdrKH*`{4$T`l)"
    "l>G_j^<PoZ&lGGL%NS7u~CQ(CnuQKNl@L-WG8(9Gzst<BSj#V?FXAkD5^ST<*p)m%Xt8y?k=jpLnyiH{Mi;%u-?Z"
    "#3q#=KKWV_h1qq}quZyG;S$S->#fOYL}K`O{b0%}@tvagA*@p^IxjUg`K6UF9=0^lG(V{D`zI`mP=35c#el4M8&Y"
    "pCxm5QiYxu1fNkE-b(_5~Wk`5$%h_ZISNu4d1ScY!|4LOm*c`=rMi>Bp=!uGHIV9pNOTyX2BXTBaXE~}t5o;6mg)"
    "gClF8m_(9b0H-0^&A7|8&=Y7X1h0nD5?r^ua3BqD&zio3|)m~amw)5C-?E(WZopAM!d<8pGDQ>f0_?AR-(nPHC^!"
    ">`Cv$iR=@Tv3jWwVzOj%v;f>obB~h;a=r(?SNfrMtSH~{1@gb`~c0q1IenDYDaY1Q8c|k?x{3u41M5`|4aoXdxCu"
    "mR9o}@ildy1-&qQHJV>Z&NPngXjRh+`u<7LNSW8<AgE$FJ(xdA6JQO>R72aIg{1h<b{PwK0SILx(t(ywX_Q@+GQh"
    "&#}PFolmX4c$FXH*dE1Bt3ukxhkNX=#)hDN$#V+F7hkJ~>sn{T$!>$|himbB5}tp_(esZ_j(SA?RX62JVit74rJM"
    "!eyFKi-FSZ?GTh>t&gR?XN(*oyGnnB8}b7pK+yNH2ZAUEa(mlB+u;N%LNoM7R()!hcgZ5kzg!V%?XHr$TLC~HlCS"
    "=II+m&G4#vC63Q0@DH$F--IdRN20xkoo9?#J}s299LebK(Yg@HzEY-8z4@08*gCF#iN0LJA_<Hz?~VmGXwwbi1=~"
    ")Za$Y+`G*7SMMed<9`lv>M{S}sC4OBCRawm8$l?H3_7)2!9%X2(IojA@=wg;_>~asY88G*BN4)9Y%!>VsFOz*m>E"
    "p5)>;^cx1h0=Ax+YUGbg-q`0Qu)L6aRW<f)N3-4UsE%LLzL>+*(3SF!z-Vxdr(Jg$2b0r3K{$l?7oFyFEsGtoAtV"
    "@!Au#Cu&d9o~%7Z)kslbzaDi}6j)7x)f8Awfz=dPO@Y-ESWSV`6gWjeOf0yPE$7R_T*UY9)4ghn_jk@OL)XPjaNj"
    "OYES-eZ=5T?jk!SS!y#Gd0C$jV@?20r}D8^1U@yk62oA@z!z%T=X?F2!jkV)4g^qfk`%PIp$+#|s?XXtfsof%h^a"
    "c{Z8ywpZKl5xTq+^BE+<$L}7#XE1GUx@S{zV|QR^79wA3O{_~&)@8S`MO`e@t1G<<$J1cSKmv0^Zpk7HTw&h_`~="
    "9`ODT8pI`IKx2kXZ`O81+_kg<j`P;6azo*sTl^_2$pq-bAai#eEi#q}Qjq01#cU|0ol?i`?`j-8rVerEj7pM74KW"
    "aF{ar)hNhTnZKZ~ocW(;s~C55D}nk8AK3e9!v*<imrBpWoFAPv7~-A^ahCVlpyS><c;<bP0q!2r3Ig+Pc!#mA0<5"
    "b)~H<ZCz>GO50Yvw&JxFudkf@ig&KG=fYhJcdZncgw83-_63~_x&-2QVTFc;iz{thp>d^+D_&ZmY2jA;&1sEuDGR"
    "sS&#kr^>kH{ovwG7=X%pJ<xIc}w)mWWL3cKRj70<4CZjGJQE`GI(U+pp>wx3@uL{M1}^4navInb|MHXm*tT>R(5O"
    "1s*gpi3Z58&=w|(ypHIt7rV`8NYglpt2yOO)Kr{ErQB|s*ILB!uIImGO8Y9dwd}+jv)v#0{Oy_9f9)#VKCx3wdc~"
    "FTY2UVV|#YKJgWJZBgJR`APwSQkq!LImRa(8lL+xovVqgqmG&tS;-6##r)?|kQ%c0&<i&5};?HB?uX6dn;N$ehvv"
    "KuDTz&E6%J?gP7TvSES9gypzKg$c;9r>|HYfkUBk6C?5$SKw4C$?Z|5FnG-;whi`tL~m|8sKwCz<~DrS{*E(CKf<"
    "<-a3?)1M^o=JvlVZ_{7l+@E;!58T%Tr?|x}+$zWIminc=RlVO^;HO$>p%34!eM{_Pbx{^n7q68C)x~RNL3P!nEU2"
    "!Ulm*o_%F2S)N{n%R;jV?dR(@-yc59|~OTxLR%jHqAc+xGNe6}>?-=vwLu%IPl|7n+B+U2k2_vG^Qwvzp`Wc_m)K"
    "dgtR+8cKs1adNM=;5gZ|BpTu^Lh;Hpkr<kwtUx~V4l;>@||C5skwY*H^HMp`lC_$gPnp7`@z?>PjyCkPFIg9>wIo"
    "hG*j$$`N7v8>>ZwL@a|Kh?m0Q0nr+qe`}CzpZGZGVW9~t_xd7AXzwqth9Q35C@~k>0CfdhTd_6Wy;W_C(rqT1mS0"
    "BEzC)~%R`}AFpT(0NDp{MA#>Gyn2%X)jHXbGAl#iwFkk6ci?Q|YcfJwGSw$FzTb_{v@qJQoNbzP;RiZ0A%TJ$m!$"
    "!{YO)hWPN6hh(S^U(vE)hwaiu7HB2JN7$AHmlo~2AKZgO*2t-vC-mmxvFSXYTTty&F~h@W-`i8=V&6GSNrv)B=RR"
    "_I^3wHDhww-jeh7Qyvf8um#r-?)s_k5OD67s7I>QfABfLvfMRi;y*uqh#Ue2y&T0WYa{Fho66J}<&_Qrc44)<P#&"
    ")IqJ07f-Pq-R+xQW&i()(S9l9RH|<f2<nF_cgcvPtpkW%#%=`nNrO?vH-ZVN<wSzg8erBWnr9v7k}`QF<v31oA!i"
    "-HHU${AiX}bo&_;!KNWJ&J(%I(CZv4!(;NIKJF<bXjDZcKf$4)`B47b>z&2w43K%&|E^;|w_jJ&s6*ym!8&cuVz@"
    "`sGs#ch<2B7+Ah+7&$YWOcJga^au8JxP_4xwmN4Bo$-SH1A!B)u0x&mrQ$EM7Z#fuK#o+bNMA+kh5nZ!MNCY40zV"
    "Mrm&{mR@P0ma54v6o!V8;Sk&pkbgpx58ojQ4NnN$w|@=Uq`vu=Z&Ba+%eVdV?Z14_U%uBb-+O=YG7W!?`damMzkK"
    "~K-|)*f{_;(~eDg2g^2@jW{Dl?D4`2Js*ZuPKzkI_l-}uWn{qoJ~`#5O&<;!9+xIg&(AAI3ApMnC*5WD2V8uySC="
    "^<K_;OHVfAZG9X)cZwSrb7muOAy_VJpUbDaexT#BFFKoOE-Rz^uNO!50Lj=gnq(njQnC*j%o&dpQqSZzKP8|SuV5"
    "1I@>v8Caf^|t!zlhCVvRK*c=#0G2Z^?3d7&O!hlM%#b>GdGVlLe7pMJSzBujv^2KTQmoHAcpDs@O7qKj{J%0P(;N"
    "K}G=B-$!Rl3j_@L)53M$h7wvBfRp;o$Yb$}bPL@6#Lm&s#MAGv4E||9@Bizk&tqs=k|*cB`uHhYH$%qi*wu_U7kb"
    ")yV$Sq5nQp+aId${$i#7LMPk*=2f-7buzuq>;Gp}@E?Burw#sTgMZrKpEmfX4QQ8zpB!^@MtArXD?Ce%r;q6!3|D"
    "ZOgtor)9t1zXkKHWpG1G%?_~8~u&%n8YXH@U?gtCMB0coLwfDVCw1%UF0HUioNQb}0+%$<Yw;PY*H=n)z&Fs1#|0"
    "?;Vnmjj?ypdSRmuevxgTX#?};Kk?l>jLwOm+0|!eRzAp9uG>o&cs<oMBYVm0<#PFr*;2n-G5s5pVs}Sb^mKy_r&S"
    "LNzYgQ?L&<JH&Vpo{dlwUL86soE4GV2_aUB`MSL8WMRkx^_Mw~$`yfti1wW2PFLh`c)xjXe!Ey%I)re^${W#O6+0"
    "ucVBRcKBL81MHHcM1lq9;*_L6v2x6#J3C{m9vU<YuW}_K!9CY<c^?sYajeY^jCqFI@3<u=yiz*#8o)h<}q~|7)nS"
    "KD^e?0t~nFFAjA6#Q}Z_4X$T5up8M;>}Gb$bR#`exF0F>`_WFX-ab@MC+^o8{eCIY@7EChe)ZAshZ+5T`p~OKCe`"
    "be`cX>tfZ~2-@lX#{s%IV5GmPp<#|;McCZ>9Va)X=Rpx)19dZ*dT%$e<8XzT~<;qb)T$SF)V_`koqn@<wx=M#cZ="
    ")RBzy&1sC=TGgJMsHp?e*41nZ@mrT(tK?>&DUIf+iywjlhjL|d=CwjI5`T9^3DvubjZK#oeSQ>$FsKn!gcCsv5SN"
    ";4*xv4#j6H4lH*t5W5CZ^Tl~`M>Fs`bJ@<-Vd7)?9g2%AC@d`YCzjh2i{AvKd!APf$1;3!n?-26ig!~*~#BbB_o8"
    "r+1Jjae-v#b0r2wtnd_~!Xh)ccIVIrXda{40oNR4jm@VzT{f+lG0(-TFl2XN=JDGe*KwR2wnLe8z}pdgfuz^O+<B"
    "j*;ijccUw>`#;=qyiAxsM*Te;`u*?OMspoB4_w(#Kg~Xq5Pp1LbD3mUJn=X3w-Jwi(uhMHWslsCd64?Dc(578&hY"
    "taILC7{w})R-BkAbal<@X}cfdQ(_@DeI;@jiJ6+f;Qt^81P$7NZjO=z~<68N<O!pG@a`pGf!+ZC?;k}j({k3V({9"
    "7G~}!})`GZ~~kNC&3}RnwKfaohxp*46Y^|<YL3KjkwK5KEAv%;q!}^e!Tdj<)5S2C{$=K2z-x94oJt319R=Ahr;H"
    "7kJh0dL!$*|jITri<)a(SW{uSypBdSiU{0v_TYb&1{Uf|5@qgf{4?Z{^{rK1XD6d+sVS0;b9alNL3Sx4Jp4)Ez^b"
    "@5>?R636{+D%or(M<cvsc|OE&J?3KjSC#Sa}Xfl`0k;E8c(Amyd_@nm=kxnU8(!V2;n2=|nEq91sV%zRX{Cd`%;i"
    "F}Ka14;Ym^CT0wdaBzLhsYb$b$3SzL24msT$U|kYc$`_#kQe-J=CXYL;QSIAYU0cM;TtaHJfxvpLPAueT;w!v(B4"
    "^KltW7p)zoKyL-<TN3?ZJGfq-{rjlQ2{RZ3`B5Mt9upMqoENmX&3Vt4ZRK%P<-vyN2HX@UxR3h+4w4615*BsiW#X"
    "4Uft|Gp0y74BHXvA|qIihmp(5$nec@$)FPr)GNt!X0KXvxHAn1e+fu#g-)Iqw4Lxxv2`8n|=)gMS3FB<hRK}CJ&k"
    "L{QRj{`^w)boI*-?RjDax48o7bL@*Zk%Z%P*Mr|w(EchlK)Rh=d_p!R_*%#6VNeklX2BZT|`x{fo7){3(c!|54Q+"
    "APGm&lwFnNwp)dQ{Hxi=H@FW24j>-})d#G_EUfD(X%Z^ic+&0}G?x9u=?TiA^PF4#R^`!D=C73RkW&;ip|<aY&!8"
    "a=Eo9-4I?$<2(v5aQ)Q`t)d2fC?lA7q4K^{BbrFlmjOdsUY-r?IVFJIR0WaY2lI2u+y>`hizEvGZbP>)(#6On*D7"
    "7;*Xn0b{vY$VUE&;nkH2YD`aJ}${~l7=5z2kfpPu@5V-;S%1O1%?vJ`Q&gH`Ce<$>IP?)tullljkmx0!C%rJ3*Zm"
    "=;0<Wq$dy3bO3CAF<9jmt^X1Zg}MHe*x{LyN&"
)
# END normalization data

_NORM_TABLES = {}
_NORM_LOCK = _threading.Lock()
_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7


def _norm_tables(form):
    """(finditer of the runs `form` may change, the characters that may
    change, decompositions, combining classes, compositions or None) for NFC,
    NFD, NFKC or NFKD, built from _NORM_DATA at first use."""
    tables = _NORM_TABLES.get(form)
    if tables is not None:
        return tables
    if form not in ("NFC", "NFD", "NFKC", "NFKD"):
        raise ValueError(f"unknown normalizer {form!r} (known: NFC, NFD, NFKC, NFKD)")
    import base64
    import re
    import zlib

    with _NORM_LOCK:
        if form in _NORM_TABLES:
            return _NORM_TABLES[form]
        text = zlib.decompress(base64.b85decode("".join(_NORM_DATA))).decode("ascii")
        canon_s, compat_s, ccc_s, excluded_s = text.split("\n")

        def mapping(entries):
            out, cp = {}, 0
            for entry in entries.split(";"):
                gap, chars = entry.split(":")
                cp += int(gap, 16)
                out[chr(cp)] = "".join(chr(int(c, 16)) for c in chars.split())
            return out

        canon, compat = mapping(canon_s), mapping(compat_s)
        ccc, cp = {}, 0
        for entry in ccc_s.split(";"):
            gap, count, value = entry.split(":")
            cp += int(gap, 16)
            for c in range(cp, cp + int(count, 16)):
                ccc[chr(c)] = int(value)
        excluded, cp = set(), 0
        for gap in excluded_s.split(";"):
            cp += int(gap, 16)
            excluded.add(chr(cp))
        back = {d: c for c, d in canon.items() if len(d) > 1 and c not in excluded}
        pairs = {(d if len(d) == 2 else back[d[:-1]] + d[-1]): c for d, c in back.items()}
        seconds = {key[1] for key in pairs}
        seconds.update(map(chr, range(_V_BASE, _V_BASE + 21)))     # Hangul vowels
        seconds.update(map(chr, range(_T_BASE + 1, _T_BASE + 28)))  # and trailing consonants
        syllables = {chr(c): _hangul(c) for c in range(_S_BASE, _S_BASE + 11172)}
        for name in ("NFC", "NFD", "NFKC", "NFKD"):
            decomp = {**canon, **compat} if "K" in name else dict(canon)
            if name.endswith("D"):
                decomp.update(syllables)
                moving = set(decomp)
            else:   # a composite that no mark follows stays as it is
                moving = {c for c, d in decomp.items() if len(d) == 1 or c in excluded
                          or c in compat}
                moving |= seconds
            moving |= set(ccc)
            # re's class of characters below U+10000 is a table (one step a
            # character, where regex's and re's of many ranges test each);
            # a run of characters above, all left alone, stays as it is
            below = _char_class(c for c in moving if c < "\U00010000")
            runs = re.compile(f"[{below}\\U00010000-\\U0010ffff]+")
            _NORM_TABLES[name] = (runs.finditer, frozenset(moving), decomp, ccc,
                                  pairs if name.endswith("C") else None)
    return _NORM_TABLES[form]


def _hangul(cp):
    s = cp - _S_BASE
    lv = chr(_L_BASE + s // 588) + chr(_V_BASE + s % 588 // 28)
    return lv + chr(_T_BASE + s % 28) if s % 28 else lv


def _char_class(chars):
    """The regex character class (without brackets) of a set of characters."""
    cps = sorted(map(ord, chars))
    out, k = [], 0
    while k < len(cps):
        j = k
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        out.append(f"\\U{cps[k]:08x}" if j == k else f"\\U{cps[k]:08x}-\\U{cps[j]:08x}")
        k = j + 1
    return "".join(out)


def _normalize(form, text):
    """`text` in Unicode normalization form `form` ("NFC", "NFD", "NFKC" or
    "NFKD") exactly as tokenizers' normalizers give it (their Unicode data,
    shipped here: see _NORM_REFERENCE), whatever Python is installed.

    >>> _normalize("NFC", "Cafe\\u0301"), _normalize("NFKC", "\\ufb01")
    ('Café', 'fi')
    """
    if text.isascii():
        return text
    runs, moving, decomp, ccc, pairs = _norm_tables(form)
    pieces, pos = [], 0
    for m in runs(text):
        run = m.group()
        if moving.isdisjoint(run):
            continue
        start, end = m.span()
        if pairs is None:   # decomposing: the character before stays as it is
            pieces.append(text[pos:start])
            pieces.append(decomp.get(run, run) if len(run) == 1
                          else _normalize_run(run, decomp, ccc, None))
        else:   # the character before a run may compose with it
            if start > pos:
                pieces.append(text[pos:start - 1])
                start -= 1
            pieces.append(_normalize_run(text[start:end], decomp, ccc, pairs))
        pos = end
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def _normalize_run(text, decomp, ccc, pairs):
    """Decompose, reorder the marks by combining class, and compose where
    `pairs` (composition) is given: Unicode's algorithm on a short run."""
    chars = list("".join([decomp.get(c, c) for c in text]))
    n, k = len(chars), 0
    while k < n:
        if chars[k] in ccc:
            j = k + 1
            while j < n and chars[j] in ccc:
                j += 1
            if j - k > 1:
                chars[k:j] = sorted(chars[k:j], key=ccc.__getitem__)
            k = j
        else:
            k += 1
    if pairs is None:
        return "".join(chars)
    out = [chars[0]]
    starter, last = 0, (256 if chars[0] in ccc else 0)
    for c in chars[1:]:
        cc = ccc.get(c, 0)
        if last < cc or last == 0:
            base = out[starter]
            composite = pairs.get(base + c)
            if composite is None:
                s, v = ord(base), ord(c)
                if 0 <= s - _L_BASE < 19 and 0 <= v - _V_BASE < 21:
                    composite = chr(_S_BASE + ((s - _L_BASE) * 21 + v - _V_BASE) * 28)
                elif (0 <= s - _S_BASE < 11172 and (s - _S_BASE) % 28 == 0
                      and 0 < v - _T_BASE < 28):
                    composite = chr(s + v - _T_BASE)
            if composite is not None:
                out[starter] = composite
                continue
        if cc == 0:
            starter = len(out)
        last = cc
        out.append(c)
    return "".join(out)


class Pipeline(_collections.namedtuple("Pipeline", "normalizers splits")):
    """A pre-tokenizer of several steps, as a Hugging Face tokenizer.json may
    have: the text is first normalized by each of `normalizers` in turn
    ("NFC", "NFD", "NFKC" or "NFKD", as tokenizers' normalizers give them:
    see normalize), then split by each regex of `splits` in turn, every
    piece of one split split again by the next (Hugging Face's Split with
    Isolated behaviour, as `pretokenizer` splits by one).  A tokenizer's
    `pattern` is a Pipeline where one regex cannot say it; give one wherever
    a pattern is taken.

    >>> p = resolve_pattern(Pipeline(["NFC"], [r"\\p{N}", "gpt2"]))
    >>> pretokenizer(p)("Cafe\u0301 2024")
    ['Café', ' ', '2', '0', '2', '4']
    """

    __slots__ = ()

    def normalize(self, text):
        """`text` normalized by each of `normalizers` in turn, exactly as
        tokenizers' normalizers give it (with their Unicode data, shipped
        here), whatever Python is installed.

        >>> Pipeline(["NFKC"], ["gpt2"]).normalize("\ufb01ne Cafe\u0301")
        'fine Café'
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        for form in self.normalizers:
            text = _normalize(form, text)
        return text


_NORMALIZERS = ("NFC", "NFD", "NFKC", "NFKD")

# DeepSeek V3's tokenizer.json: a Sequence of three Isolated Splits (then ByteLevel
# without its regex): runs of 1 to 3 digits; runs of CJK ideographs, hiragana and
# katakana; then a GPT-4-like pattern over \p{P} and \p{S}.
PATTERNS["deepseek_v3"] = Pipeline((), (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
))

# A bare identifier is a name or a mistake, never a regex (write a regex that is
# one word as a group: (?:word)).
_NAME_LIKE = _regex.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _unknown_name(what, name, names, hint=""):
    return ValueError(f"unknown {what} name {_short(name)}: the names are "
                      f"{', '.join(names)}{hint}")


def resolve_pattern(pattern):
    """Return the regex string for a pattern name, None, or a custom regex;
    a Pipeline with its splits resolved (the one regex where that is all).
    The names are PATTERNS' keys; a bare identifier that is none of them is
    a ValueError listing them, any other string is a regex.  (Only the API
    and the command line resolve names: a pattern read from a file is the
    regex it says.)

    >>> resolve_pattern("words")
    '\\\\S+\\\\s?|\\\\s+'
    >>> resolve_pattern(None) == resolve_pattern("bytes")
    True
    """
    if pattern is None:
        return PATTERNS["bytes"]
    if isinstance(pattern, Pipeline):
        return _resolve_pipeline(pattern, resolve_pattern)
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, a Pipeline or None, not "
                        f"{type(pattern).__name__}")
    named = PATTERNS.get(pattern)
    if named is not None:
        return named
    if _NAME_LIKE.fullmatch(pattern):
        raise _unknown_name("pattern", pattern, PATTERNS, " (a regex that is one bare word: "
                            f"write it as a group, (?:{pattern}))")
    _compile_pattern(pattern)
    return pattern


def _check_pattern(pattern):
    """A pattern as a file (or tiktoken's pat_str) gives it: a regex, or a
    Pipeline of regexes, checked; never a name.  The Pipeline that is one
    regex is that regex."""
    if isinstance(pattern, Pipeline):
        return _resolve_pipeline(pattern, _check_pattern)
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or a Pipeline, not {type(pattern).__name__}")
    _compile_pattern(pattern)
    return pattern


def _resolve_pipeline(pipeline, resolve):
    forms, splits = pipeline
    if isinstance(forms, str) or isinstance(splits, str):
        raise TypeError("a Pipeline's normalizers and splits are sequences of str")
    forms, splits = tuple(forms), tuple(splits)
    for form in forms:
        if form not in _NORMALIZERS:
            raise ValueError(f"unknown normalizer {_short(form)} (known: "
                             f"{', '.join(_NORMALIZERS)})")
    if not splits:
        raise ValueError("a Pipeline needs at least one split (\"bytes\": none)")
    out = []
    for p in splits:
        p = resolve(p) if isinstance(p, str) else _not_str(p)
        if isinstance(p, Pipeline):  # a named pipeline among the splits: its splits
            if p.normalizers:
                raise ValueError("a named pipeline with normalizers cannot be a split")
            out.extend(p.splits)
        else:
            out.append(p)
    splits = tuple(out)
    if not forms and len(splits) == 1:
        return splits[0]
    return Pipeline(forms, splits)


def _not_str(value):
    raise TypeError(f"a Pipeline's splits are str, not {type(value).__name__}")


_compiled = {}

# Text that shows every class a pattern may care about: a pattern that finds
# nothing but empty matches in it matches the empty string everywhere.
_PROBE = "Hello, World! it's 2024\n\t  café 東京 🙂 ÀB_c-d.e/f\r\n"

# A custom pattern runs under a time budget, kept like a token bucket: each
# character of text earns PATTERN_TIME_PER_CHAR seconds (2 us: 0.5 MB/s, far
# below any sane pattern), unspent time carries over up to PATTERN_TIME_BASE.
# A split that overruns raises ValueError, so a catastrophic pattern costs at
# most about PATTERN_TIME_BASE plus 2 us per character, whatever the input.
# Each thread has its own bucket, spent in its own CPU time: other threads'
# work and the machine's load drain nothing.
PATTERN_TIME_BASE = 2.0
PATTERN_TIME_PER_CHAR = 2e-6


def _compile_pattern(pattern):
    rx = _compiled.get(pattern)
    if rx is None:
        try:
            rx = _regex.compile(pattern)
        except (_regex.error, TypeError, ValueError, OverflowError, RecursionError) as e:
            raise ValueError(f"invalid pattern {_short(pattern)}: {e}") from None
        if rx.flags & _regex.REVERSE:
            raise ValueError(f"the pattern {_short(pattern)} searches backwards (?r): "
                             f"pre-tokens are read left to right")
        try:
            found = {bool(m.group()) for m in rx.finditer(_PROBE, timeout=PATTERN_TIME_BASE)}
        except TimeoutError:
            raise ValueError(f"the pattern {_short(pattern)} took too long on a short probe "
                             f"text (catastrophic backtracking?)") from None
        if (rx.match("") is not None or False in found) and True not in found:
            raise ValueError(f"the pattern {_short(pattern)} matches only the empty string")
        _compiled[pattern] = rx
    return rx


_NAMED_PATTERNS = frozenset(PATTERNS.values())


def pretokenizer(pattern):
    """The pre-tokenizer of a regex or a Pipeline (a resolved pattern: see
    resolve_pattern): a function text -> list of pre-tokens.

    >>> pretokenizer(resolve_pattern("gpt2"))("Hello world, it's 42!")
    ['Hello', ' world', ',', ' it', "'s", ' 42', '!']
    >>> pretokenizer(r"\\d+")("in 2024 or so")  # the text between matches is kept
    ['in ', '2024', ' or so']

    Named patterns match every character, so their matches are the
    pre-tokens.  For a custom pattern, the text between two matches (a gap)
    is a pre-token of its own (Hugging Face's Split with Isolated behaviour),
    empty matches are skipped, capture groups do not matter, and the split
    runs under a time limit: a catastrophic pattern raises ValueError."""
    if isinstance(pattern, Pipeline):
        return _pipeline_split(pattern)
    rx = _compile_pattern(pattern)
    if rx.pattern in _NAMED_PATTERNS:
        return rx.findall

    import threading

    bucket = threading.local()  # .slack: this thread's unspent time
    groups = rx.groups  # findall would give the groups, not the whole matches

    def split(text):
        budget = getattr(bucket, "slack", PATTERN_TIME_BASE) + PATTERN_TIME_PER_CHAR * len(text)
        start = _time.thread_time()
        out = None
        if not groups:
            try:  # regex's clock is the process's CPU time: never less than this thread's
                out = rx.findall(text, timeout=budget)
            except TimeoutError:
                pass
        if out is None or sum(map(len, out)) != len(text) or "" in out:
            out = with_gaps(text, start + budget)
        bucket.slack = min(PATTERN_TIME_BASE, budget - (_time.thread_time() - start))
        return out

    def with_gaps(text, deadline):
        """The matches and the text between them, until this thread's CPU
        clock reaches `deadline`; where regex's clock (every thread's time)
        stops it first, matching goes on after the last match."""
        out, pos = [], 0
        append = out.append
        while True:
            left = deadline - _time.thread_time()
            if left <= 0:
                bucket.slack = PATTERN_TIME_BASE  # the error ends the call: the next starts afresh
                raise ValueError(
                    f"the pattern {_short(rx.pattern)} took too long on a text of {len(text)} "
                    f"characters (catastrophic backtracking?); simplify it")
            try:
                for m in rx.finditer(text, pos, timeout=left):
                    start, end = m.span()
                    if start == end:
                        continue
                    if start > pos:
                        append(text[pos:start])
                    append(text[start:end])
                    pos = end
                break
            except TimeoutError:
                continue
        if pos < len(text):
            append(text[pos:])
        return out

    return split


def _pipeline_split(pipeline):
    forms = pipeline.normalizers
    steps = [pretokenizer(p) for p in pipeline.splits]

    def split(text):
        pieces = steps[0](pipeline.normalize(text) if forms else text)
        for step in steps[1:]:
            pieces = [q for piece in pieces for q in step(piece)]
        return pieces

    return split


_CUSTOM_CUTS = {}   # pattern -> its cut regex (bytes) or None
_LINE_CUTS = {}


def _line_cut(kind):
    """The custom patterns' cut, between an ASCII letter or digit and a line
    feed, as a regex over `kind` (bytes or str); compiled at first use."""
    if kind not in _LINE_CUTS:
        text = r"[0-9A-Za-z](?=\n)"
        _LINE_CUTS[kind] = _regex.compile(text.encode("ascii") if kind is bytes else text)
    return _LINE_CUTS[kind]


def _custom_cut(pattern):
    """_line_cut(bytes) (between an ASCII letter or digit and a line feed) where that
    is a safe cut for a pattern of the GPT family, else None.  It is where
    no match can take such a character and then the line feed (so a
    pre-token ends there), where no (?!C) with a line feed in C and no $
    can be tried right after such a character (the only tests that read the
    line feed and the end of the text differently), and where a match always
    starts at a line feed (so no text between two matches spans the cut).
    What follows the cut does not depend on what precedes it: the family has
    no look-behind."""
    if pattern in _CUSTOM_CUTS:
        return _CUSTOM_CUTS[pattern]
    program = pattern_program(pattern)
    cut = None
    if program is not None:
        classes = program["classes"]
        alnum = {k for k, ranges in enumerate(classes)
                 if any(a <= hi and lo <= b for a, b in ranges
                        for lo, hi in ((48, 57), (65, 90), (97, 122)))}
        lf = {k for k, ranges in enumerate(classes) if any(a <= 10 <= b for a, b in ranges)}
        pairs, checks = set(), []

        def walk(seq, last):
            """The classes the last character taken may be in after `seq`
            (None: nothing taken yet), given `last` before it."""
            for node in seq:
                if node[0] == "class":
                    k, low, high = node[1], node[2], node[3]
                    pairs.update((a, k) for a in last)
                    if high is None or high >= 2:
                        pairs.add((k, k))
                    last = last | {k} if low == 0 else {k}
                elif node[0] == "group":
                    low, high = node[2], node[3]
                    out = set()
                    for inner in node[1]:
                        out |= walk(inner, last)
                    if high is None or high >= 2:   # a round after a round
                        for inner in node[1]:
                            out |= walk(inner, last | out)
                    nullable = low == 0 or _program_nullable(node[1])
                    last = last | out if nullable else out
                elif node[0] == "end" or node[1] in lf:   # (?!C) with a line feed in C
                    checks.append(last)
            return last

        for seq in program["alternatives"]:
            walk(seq, set())
        starts = any(seq and seq[0][0] == "class" and seq[0][1] in lf and seq[0][2] == 1
                     and all(n[0] in ("class", "group") and n[2] == 0 for n in seq[1:])
                     for seq in program["alternatives"])
        if (starts and not any(a in alnum and b in lf for a, b in pairs)
                and not any(last & alnum for last in checks)):
            cut = _line_cut(bytes)
    _CUSTOM_CUTS[pattern] = cut
    return cut


def _program_nullable(alts):
    return any(all(n[0] in ("end", "not_ahead") or n[2] == 0
                   or (n[0] == "group" and _program_nullable(n[1])) for n in seq)
               for seq in alts)


def _cut_kind(pattern, specials):
    """The regex (over bytes) whose match ends mark safe cuts, or None.  A
    special token with a line break in it could straddle a cut: none then."""
    if any("\n" in s or "\r" in s for s in specials):
        return None
    cut = _FILE_CUTS.get(pattern)
    return cut if cut is not None or pattern == PATTERNS["bytes"] else _custom_cut(pattern)


def _special_regex(specials):
    """A regex matching any of `specials`, the longest first at each place."""
    if not specials:
        return None
    alts = sorted(set(specials), key=lambda s: (-len(s), s))
    return _regex.compile("|".join(_regex.escape(s) for s in alts))


# The open models' special tokens by name (special_tokens="llama3", bpe --special
# llama3): a dict of fixed ids, or a list whose tokens take the ids after the
# vocabulary, in order.
SPECIAL_TOKENS = {
    # Meta's Llama 3 (tokenizer.py): 256 specials after the 128,000 ranks
    "llama3": {s: 128000 + i for i, s in enumerate(
        ["<|begin_of_text|>", "<|end_of_text|>"]
        + [f"<|reserved_special_token_{k}|>" for k in range(4)]
        + ["<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_4|>",
           "<|eot_id|>"]
        + [f"<|reserved_special_token_{k}|>" for k in range(5, 251)])},
    # Qwen 3's added tokens (Qwen 2.5's are the first 22, Qwen 2's the first 3)
    "qwen2": {s: 151643 + i for i, s in enumerate([
        "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
        "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
        "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
        "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
        "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
        "<think>", "</think>"])},
    # nanochat's SPECIAL_TOKENS: after the merges of the vocabulary it trains
    "nanochat": ["<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>",
                 "<|assistant_end|>", "<|python_start|>", "<|python_end|>",
                 "<|output_start|>", "<|output_end|>"],
}


def _special_set(special_tokens):
    """special_tokens as given, or a copy of the named set of SPECIAL_TOKENS; a
    bare identifier that names none is a ValueError listing them."""
    if isinstance(special_tokens, str):
        named = SPECIAL_TOKENS.get(special_tokens)
        if named is not None:
            return named.copy()
        if _NAME_LIKE.fullmatch(special_tokens):
            raise _unknown_name("special-token set", special_tokens, SPECIAL_TOKENS)
    return special_tokens


def _check_specials(special_tokens):
    """The special tokens as a tuple of str, in the order given (a sequence, or
    a mapping's keys, or a set's name: SPECIAL_TOKENS).  A set has no order,
    so the ids it would give change from run to run: TypeError."""
    special_tokens = _special_set(special_tokens)
    if special_tokens is None:
        return ()
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError("special_tokens must be a sequence of str, not a "
                        f"{type(special_tokens).__name__}")
    if isinstance(special_tokens, _abc.Set) and not isinstance(special_tokens, _abc.KeysView):
        raise TypeError("special_tokens must be a list (or another sequence), not a "
                        f"{type(special_tokens).__name__}: a set has no order, so the ids it "
                        "gives would change from run to run")
    try:
        specials = tuple(special_tokens)
    except TypeError:
        raise TypeError(f"special_tokens must be a sequence of str, not "
                        f"{type(special_tokens).__name__}") from None
    seen = set()
    for s in specials:
        _check_special_text(s)
        if s in seen:
            raise ValueError(f"special token {_short(s)} is given twice")
        seen.add(s)
    return specials


def _check_special_text(s):
    if not isinstance(s, str):
        raise TypeError(f"special_tokens must hold str, not {type(s).__name__}: {_short(s)}")
    if not s:
        raise ValueError("special tokens must not be empty")
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"special token {_short(s)} holds a lone surrogate "
                             f"(U+{ord(s[e.start]):04X}), which has no UTF-8 bytes") from None


_MAX_ID = 1 << 31  # ids are int32 in the compiled core


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return value


def _thread_count(num_threads):
    """A batch method's `num_threads`: None, or a plain int >= 1 (an integer
    type such as numpy's is read as its int, as tiktoken takes it; not a bool)."""
    if num_threads is None:
        return None
    if not isinstance(num_threads, int):
        try:
            num_threads = _operator.index(num_threads)
        except TypeError:
            pass  # _check_int names the type
    return _check_int("num_threads", num_threads, 1)


def _as_list(items, must):
    """A batch's texts or a sequence of ids as a new list; for a str, bytes or
    anything not iterable, TypeError "<must>, not <its type>" (an iterable's
    own TypeError, raised as it runs, comes through as it is)."""
    if not isinstance(items, (str, bytes)):
        try:
            return list(items)
        except TypeError:
            if hasattr(items, "__iter__") or hasattr(items, "__getitem__"):
                raise
    raise TypeError(f"{must}, not {type(items).__name__}")


def _short(value, limit=60):
    """repr(value), cut to about `limit` characters for error messages."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} long)" if hasattr(value, "__len__") else ""
    return text[:limit] + "..." + size


_NONE_ALLOWED = frozenset()   # the default allowed_special (told apart by identity)


class _Unset:
    """The default of an argument that may come under tiktoken's keyword instead."""

    def __repr__(self):
        return "<required>"


_UNSET = _Unset()


def _either(method, name, value, alias, alias_value):
    """The argument `name` of `method`, given positionally or by name, or
    under tiktoken's keyword `alias` (decode(tokens=...), encode_batch(text=...)),
    so that code written for tiktoken.Encoding runs unchanged."""
    if alias_value is _UNSET:
        if value is _UNSET:
            raise TypeError(f"{method}() missing its argument {name!r}")
        return value
    if value is not _UNSET:
        raise TypeError(f"{method}() got both {name!r} and {alias!r}")
    return alias_value


def _repair(text):
    """Replace lone surrogates by U+FFFD (as tiktoken does); check the type.
    A str subclass (numpy.str_, ...) is read as the plain str it holds."""
    if type(text) is not str:
        if not isinstance(text, str):
            raise TypeError(f"expected str, not {type(text).__name__}")
        text = str.__str__(text)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# --------------------------------------------------------------------------
# Counting pre-tokens
# --------------------------------------------------------------------------


def _count_into(counter, text, repair, special_re):
    """Add the pre-tokens of one document to a core's counter."""
    text = repair(text)
    if special_re is None:
        counter.add(text)
    else:
        for piece in special_re.split(text):
            if piece:
                counter.add(piece)


class _Counter:
    """The pure-Python core's pre-token counter (see CoreProtocol.counter)."""

    def __init__(self, pattern):
        self._split = pretokenizer(pattern)
        self._counts = _collections.Counter()

    def add(self, text):
        self._counts.update(self._split(text))

    def pack(self):
        return self._counts

    def add_packed(self, packed):
        self._counts.update(packed)

    def clear(self):
        self._counts = _collections.Counter()

    def __len__(self):
        return len(self._counts) - ("" in self._counts)

    def to_dict(self):
        self._counts.pop("", None)
        return {k.encode("utf-8"): v for k, v in self._counts.items()}


# --------------------------------------------------------------------------
# Learning merges
# --------------------------------------------------------------------------


# Counts are 64-bit in the compiled core: the sum of count x (length - 1) over
# the distinct pre-tokens (which bounds every pair's count) must fit.
MAX_COUNT = 2**63 - 1
COUNT_OVERFLOW = ("the pre-token counts are too large: the sum of count x (length - 1) "
                  "must stay below 2**63")


def _reporter(progress):
    """A progress argument as a callable (phase, done, total), or None."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return ProgressBar()
    if not callable(progress):
        raise TypeError(f"progress must be True, False or a callable (phase, done, total), "
                        f"not {type(progress).__name__}")
    return progress
def _desc_key(token):
    """A str whose ascending order is the descending order of `token`
    (a terminator above every byte makes a prefix sort after its extensions)."""
    return token.translate(_INVERT).decode("latin-1") + "\u0100"


_INVERT = bytes(range(255, -1, -1))

# How training breaks a tie between pairs of the same count: "bytes" (the
# default) takes the greatest (left_bytes, right_bytes); "rustbpe" takes the
# smallest (left_id, right_id), as rustbpe (nanochat's trainer) does.
_TIE_BREAKS = ("bytes", "rustbpe")


def _check_tie_break(tie_break):
    if not isinstance(tie_break, str):
        raise TypeError(f"tie_break must be a str, not {type(tie_break).__name__}")
    if tie_break not in _TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {', '.join(map(repr, _TIE_BREAKS))}, "
                         f"not {tie_break!r}")


def _check_learn_options(n_merges, min_frequency, max_token_bytes, tie_break="bytes"):
    """The options of a core's ``learn_merges``, checked (both cores call it
    first, as the Tokenizer's _train_options checks its own): ``n_merges`` an
    int in [0, 2**31 - 256] (a cap: training stops where the pairs run out),
    ``min_frequency`` an int >= 0,
    ``max_token_bytes`` None or an int >= 1, ``tie_break`` one of _TIE_BREAKS."""
    _check_int("n_merges", n_merges, 0)
    if n_merges > _MAX_ID - 256:
        raise ValueError(f"n_merges {n_merges} would need ids of 2**31 or more (ids are int32)")
    _check_int("min_frequency", min_frequency, 0)
    if max_token_bytes is not None:
        _check_int("max_token_bytes", max_token_bytes, 1)
    _check_tie_break(tie_break)


def _learn_merges(counts, n_merges, min_frequency, max_token_bytes, progress=None, consume=True,
                  tie_break="bytes"):
    """The merge loop: `counts` maps pre-token bytes -> count (or is a
    counter of this core).  Returns the merges as pairs of ids (0..255 are
    bytes, 256 + k the k-th merge).  With `consume`, it empties `counts` (the
    caller's own) once it has copied them.
    `progress`: None or a callable (phase, done, total), told "pretokens",
    then "merge" every 256 merges and at the end.  `tie_break`: see
    _TIE_BREAKS.

    Three steps, named as in the compiled core: _load_words, then
    _next_pair and _apply_merge until n_merges or no pair is left."""
    _check_learn_options(n_merges, min_frequency, max_token_bytes, tie_break)
    if isinstance(counts, _Counter):
        counter, counts = counts, counts.to_dict()
        if consume:
            counter.clear()
    if progress is not None:
        progress("pretokens", len(counts), len(counts))
    limit = max_token_bytes if max_token_bytes is not None else float("inf")
    words = _load_words(counts, consume, min_frequency, limit, tie_break == "rustbpe")
    n_merges = min(n_merges, words.n_symbols - words.n_words)  # each merge takes out a symbol
    merges = []
    if progress is not None:
        progress("merge", 0, n_merges)
    while len(merges) < n_merges:
        pair = _next_pair(words)
        if pair is None:
            break
        merges.append(pair)
        _apply_merge(words, *pair)
        if progress is not None and not len(merges) & 255:
            progress("merge", len(merges), n_merges)
    if progress is not None:
        progress("merge", len(merges), len(merges))
    return merges


class _Words:
    """The merge loop's state.  Every symbol of every distinct pre-token is a
    position in flat arrays linked as lists (sym, nxt, prv; weight: the
    pre-token's count); each pair keeps its count and the positions where it
    starts, so a merge touches only its own occurrences (a 500 KB pre-token is
    no worse than many short ones).  A heap with lazy invalidation picks the
    next pair by (count, greatest bytes), or with `by_id` (count, smallest
    ids): each token's key in `keys` sorts in that order."""

    __slots__ = ("sym", "nxt", "prv", "weight", "pairs", "heap", "tokens", "keys",
                 "min_frequency", "limit", "n_symbols", "n_words", "by_id")


def _load_words(counts, consume, min_frequency, limit, by_id=False):
    """Pre-token counts -> the symbol arrays, each pair's count and
    positions, and the heap of the pairs that may be merged (a _Words).
    `by_id`: ties go to the smallest pair of ids (rustbpe's rule)."""
    w = _Words()
    w.tokens = [bytes([i]) for i in range(256)]
    w.by_id = by_id
    w.keys = keys = list(range(256)) if by_id else [_desc_key(t) for t in w.tokens]
    w.sym, w.nxt, w.prv, w.weight = sym, nxt, prv, weight = [], [], [], []
    pairs = {}  # (a, b) -> [count, the positions where it starts (some stale)...]
    pairs_total = n_words = 0
    get = pairs.get
    for word, count in counts.items():
        n = len(word)
        if n < 2 or count <= 0:
            continue
        pairs_total += count * (n - 1)
        if pairs_total > MAX_COUNT:
            raise ValueError(COUNT_OVERFLOW)
        n_words += 1
        base = len(sym)
        sym.extend(word)
        nxt.extend(range(base + 1, base + n))
        nxt.append(-1)
        prv.append(-1)
        prv.extend(range(base, base + n - 1))
        weight.extend([count] * n)
        for pos, pair in enumerate(zip(word, word[1:]), base):
            e = get(pair)
            if e is None:
                pairs[pair] = [count, pos]
            else:
                e[0] += count
                e.append(pos)
    if consume:
        counts.clear()  # the caller's own dict: free it before the loop
    w.n_symbols, w.n_words = len(sym), n_words
    w.min_frequency, w.limit = min_frequency, limit
    # A pair's count never grows once the merge that makes it is over: one
    # below min_frequency can never be merged, and is forgotten.
    w.pairs = pairs = {pair: e for pair, e in pairs.items() if e[0] >= min_frequency}
    w.heap = [(-e[0], keys[a], keys[b], a, b) for (a, b), e in pairs.items() if limit >= 2]
    _heapq.heapify(w.heap)
    return w


def _next_pair(w):
    """Pop the pair with the highest count (ties: the greatest bytes, or with
    w.by_id the smallest ids), skipping
    stale heap entries; None when no pair is left or the best one is below
    min_frequency (training stops)."""
    heap, get, keys = w.heap, w.pairs.get, w.keys
    while heap:
        neg, _, _, a, b = heap[0]
        e = get((a, b))
        c = e[0] if e is not None else 0
        if c != -neg:  # stale: the count changed since it was pushed
            if c > 0:
                _heapq.heapreplace(heap, (-c, keys[a], keys[b], a, b))
            else:
                _heapq.heappop(heap)
            continue
        if c < w.min_frequency:
            return None
        _heapq.heappop(heap)
        return a, b
    return None


def _apply_merge(w, a, b):
    """Merge (a, b) into a new token at every position that still holds it,
    left to right; move the counts of the neighbour pairs, (x, a) -> (x, new)
    and (b, y) -> (new, y); push the pairs this merge makes onto the heap."""
    # the hot loop of training (every occurrence of every merge): kept in one piece
    sym, nxt, prv, weight, pairs, tokens = w.sym, w.nxt, w.prv, w.weight, w.pairs, w.tokens
    get = pairs.get
    new = len(tokens)
    tokens.append(tokens[a] + tokens[b])
    w.keys.append(new if w.by_id else _desc_key(tokens[new]))
    positions = get((a, b))[1:]
    positions.sort()
    born = []  # the pairs this merge makes
    for p in positions:
        if sym[p] != a:
            continue
        q = nxt[p]
        if q < 0 or sym[q] != b:
            continue
        n = weight[p]
        left, right = prv[p], nxt[q]
        if left >= 0:  # (x, a) loses n, (x, new) gains it
            x = sym[left]
            old = (x, a)
            e = get(old)
            if e is not None:
                e[0] -= n
                if not e[0]:
                    del pairs[old]
            pair = (x, new)
            e = get(pair)
            if e is None:
                pairs[pair] = [n, left]
                born.append(pair)
            else:
                e[0] += n
                e.append(left)
        if right >= 0:  # (b, y) loses n, (new, y) gains it
            y = sym[right]
            old = (b, y)
            e = get(old)
            if e is not None:
                e[0] -= n
                if not e[0]:
                    del pairs[old]
            pair = (new, y)
            e = get(pair)
            if e is None:
                pairs[pair] = [n, p]
                born.append(pair)
            else:
                e[0] += n
                e.append(p)
            prv[right] = p
        sym[p] = new
        sym[q] = -1
        nxt[p] = right
    pairs.pop((a, b), None)
    keys, heap = w.keys, w.heap
    for pair in born:
        e = get(pair)
        if e is None:
            continue
        if e[0] < w.min_frequency:  # never mergeable: its count can only drop
            del pairs[pair]
            continue
        x, y = pair
        if len(tokens[x]) + len(tokens[y]) <= w.limit:
            _heapq.heappush(heap, (-e[0], keys[x], keys[y], x, y))


# --------------------------------------------------------------------------
# Encoding one pre-token by merge rank
# --------------------------------------------------------------------------


def _bpe_short(ids, pair_rank, rank_pair, rank_id):
    """Merge the lowest-ranked adjacent pair, every non-overlapping occurrence
    left to right, until none is left.  Quadratic; for short pre-tokens."""
    get = pair_rank.get
    while len(ids) > 1:
        best = None
        for pair in zip(ids, ids[1:]):
            r = get(pair)
            if r is not None and (best is None or r < best):
                best = r
        if best is None:
            break
        a, b = rank_pair[best]
        new = rank_id[best]
        out, i, n = [], 0, len(ids)
        while i < n:
            if i + 1 < n and ids[i] == a and ids[i + 1] == b:
                out.append(new)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids


def _bpe_long(ids, pair_rank, rank_id):
    """The same result with a heap of (rank, position) over a linked list:
    O(n log n) for long pre-tokens."""
    n = len(ids)
    sym = list(ids)
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    get = pair_rank.get
    heap = []
    for i in range(n - 1):
        r = get((sym[i], sym[i + 1]))
        if r is not None:
            heap.append((r, i))
    _heapq.heapify(heap)
    while heap:
        r, p = _heapq.heappop(heap)
        q = nxt[p] if sym[p] >= 0 else -1
        if q < 0 or get((sym[p], sym[q])) != r:
            continue
        sym[p] = rank_id[r]
        sym[q] = -1
        right = nxt[q]
        nxt[p] = right
        if right >= 0:
            prv[right] = p
            r2 = get((sym[p], sym[right]))
            if r2 is not None:
                _heapq.heappush(heap, (r2, p))
        left = prv[p]
        if left >= 0:
            r2 = get((sym[left], sym[p]))
            if r2 is not None:
                _heapq.heappush(heap, (r2, left))
    return [s for s in sym if s >= 0]


_TYPECODES = {2: "H", 4: "I" if _array.array("I").itemsize == 4 else "L"}


def _pack_ids(ids, itemsize):
    """A list of ids as little-endian unsigned ints of `itemsize` (2 or 4) bytes."""
    if _operator.index(itemsize) not in _TYPECODES:
        raise ValueError(f"itemsize must be 2 or 4, not {_short(itemsize)}")
    packed = _array.array(_TYPECODES[itemsize], ids)
    if _sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _stop_names(stop):
    """The strs a core's `stop` holds (the disallowed special tokens), as a
    tuple; TypeError for anything else."""
    stop = tuple(stop)
    for name in stop:
        if not isinstance(name, str):
            raise TypeError(f"expected str, not {type(name).__name__}")
    return stop


_SHORT = 48            # pre-tokens up to this many bytes use _bpe_short
_CACHE_SIZE = 1 << 16  # pre-token -> ids entries before the cache is cleared
_CACHE_MAX_LEN = 64    # longer pre-tokens are not cached


# --------------------------------------------------------------------------
# The core: the hot work, behind a small interface (CoreProtocol)
# --------------------------------------------------------------------------


class _Flattened(_itertools.chain):
    """itertools.chain that also holds its source: CPython 3.11's chain drops
    its reference to a generator that raised, even one still running (an
    input that calls next() on its own stream), and frees it mid-run."""

    @classmethod
    def from_iterable(cls, iterable):
        it = iter(iterable)
        flat = super().from_iterable(it)
        flat.source = it
        return flat


def _check_core_model(pattern, ranks, merges, specials, is_token=None):
    """Validate what a core is built from (``Core(pattern, ranks, merges,
    specials)``; ``Core.from_model`` passes its model's ``has_id`` as
    `is_token` and no ranks): both cores call it first, so a core built by
    hand raises TypeError (a wrong type) or ValueError (a bad value) naming
    the value, and the compiled one never indexes with an unchecked id.
    Ranks map non-empty bytes (every single byte among them) to distinct ids
    in [0, 2**31); each merge is (left id, right id, merged id) of tokens,
    the merged token's bytes being the left's then the right's; specials map
    non-empty str to ids no token and no other special token has.  Bulk
    checks first (a GPT-2-sized model in milliseconds), then the first
    offender is looked for only when one is known to exist."""
    if not isinstance(pattern, (str, Pipeline)):
        raise TypeError(f"a core's pattern must be a str or a Pipeline, not "
                        f"{type(pattern).__name__}")
    if not isinstance(specials, dict):
        raise TypeError(f"a core's specials must be a dict, not {type(specials).__name__}")
    if is_token is None:
        if not isinstance(ranks, dict):
            raise TypeError(f"a core's ranks must be a dict, not {type(ranks).__name__}")
        if not isinstance(merges, list):
            raise TypeError(f"a core's merges must be a list, not {type(merges).__name__}")
        decoder = _check_core_ranks(ranks)
        _check_core_merges(merges, ranks, decoder)
        is_token = decoder.__contains__
    _check_special_ids(specials, is_token)


def _first(items, bad):
    return next(x for x in items if bad(x))


def _check_core_ranks(ranks):
    if set(map(type, ranks)) - {bytes}:
        t = _first(ranks, lambda t: type(t) is not bytes)
        raise TypeError(f"a core's token {_short(t)} must be bytes, not {type(t).__name__}")
    if b"" in ranks:
        raise ValueError(f"a core's token b'' (id {ranks[b'']}) is empty")
    ids = list(ranks.values())
    if set(map(type, ids)) - {int}:
        t = _first(ranks, lambda t: type(ranks[t]) is not int)
        raise TypeError(f"a core's token {_short(t)} has id {_short(ranks[t])}, not an int")
    if ids and not (0 <= min(ids) and max(ids) < _MAX_ID):
        t = _first(ranks, lambda t: not 0 <= ranks[t] < _MAX_ID)
        raise ValueError(f"a core's token {_short(t)} has id {ranks[t]}, outside [0, 2**31)")
    decoder = dict(zip(ids, ranks))
    if len(decoder) != len(ranks):
        seen = {}
        for t, i in ranks.items():
            if seen.setdefault(i, t) is not t:
                raise ValueError(f"a core's id {i} is given to two tokens, {_short(seen[i])} and "
                                 f"{_short(t)}")
    for b in range(256):
        if bytes([b]) not in ranks:
            raise ValueError(f"a core's ranks lack the single byte 0x{b:02x}")
    return decoder


def _check_core_merges(merges, ranks, decoder):
    if set(map(type, merges)) - {tuple, list} or set(map(len, merges)) - {3}:
        k, m = _first(enumerate(merges), lambda km: type(km[1]) not in (tuple, list)
                      or len(km[1]) != 3)
        raise TypeError(f"a core's merge {k} must be (left id, right id, merged id), not "
                        f"{_short(m)}")
    flat = list(_itertools.chain.from_iterable(merges))
    if set(map(type, flat)) - {int}:
        k, m = _first(enumerate(merges), lambda km: set(map(type, km[1])) - {int})
        raise TypeError(f"a core's merge {k} {_short(m)} must hold three ints")
    if not set(flat) <= decoder.keys():
        k, m = _first(enumerate(merges), lambda km: not set(km[1]) <= decoder.keys())
        i = _first(m, lambda i: i not in decoder)
        raise ValueError(f"a core's merge {k} {_short(m)}: {i} is not a token's id")
    left = map(decoder.__getitem__, flat[0::3])
    right = map(decoder.__getitem__, flat[1::3])
    joined = list(map(ranks.get, map(bytes.__add__, left, right)))
    if joined != flat[2::3]:
        k = _first(range(len(merges)), lambda k: joined[k] != merges[k][2])
        a, b, m = merges[k]
        raise ValueError(f"a core's merge {k} {_short(merges[k])} joins "
                         f"{_short(decoder[a] + decoder[b])}, which is not token {m} "
                         f"({_short(decoder[m])})")


@_typing.runtime_checkable
class CoreProtocol(_typing.Protocol):
    """What a Tokenizer asks of its core: the contract that ``bpe_fallback.Core``
    (pure Python) and the compiled ``bpe.Core`` (typed C) both keep, with the
    same results.  A Tokenizer (the policy: API, special tokens, files) holds
    one core and never looks inside it.  tests/test_core_contract.py checks
    that each core has exactly these members, of the same kinds and
    signatures; bpe.pyi declares them once, here, for the compiled Core.

    A core is built as ``Core(pattern, ranks, merges, specials)`` from a model
    the Tokenizer has validated (``check_model`` checks it again): the regex of
    a resolved pattern (or a Pipeline); ranks, token bytes -> id (the special
    tokens excluded); the merges in rank order as (left id, right id, merged
    id); specials, str -> id (names may share an id: the first decodes it).
    Text given to the encoding members holds no special tokens (the Tokenizer
    splits them out), and lone surrogates are repaired as ``repair`` does.
    The members the Tokenizer needs before any core exists (start-up,
    training, checks) are static or class methods.  The C readers
    (tiktoken_model, native_model) take the plain case of a file only, with
    every check of the Tokenizer's own readers; their model answers max_id,
    id_of(bytes), token(id) and has_id(id); None means that the Tokenizer
    reads the input itself (with the same result or error).
    """

    # ---- what the Tokenizer reads about its core ---------------------------

    @property
    def releases_gil(self) -> bool:
        """Whether threads encode in parallel (then encode_batch and encode_files use threads)."""

    @property
    def pretokenizer(self) -> Literal["native", "regex"]:
        """How this core splits text: what Tokenizer.pretokenizer reports."""

    # ---- encoding ----------------------------------------------------------

    def encode_text(self, text: str) -> list[int]:
        """The ids of text: its pre-tokens, each merged by rank (encode's unit of work)."""

    def encode_texts(self, texts: Iterable[str], stop: Iterable[str] = ()) -> list[list[int]]:
        """encode_text of each text up to the first holding a str of `stop`: encode_batch's."""

    def encode_prefix(self, text: str, limit: int) -> tuple[int, Sequence[int]]:
        """(cut, ids) of the pre-tokens ending by char `limit`: how encode_iterable cuts."""

    def encode_pieces(self, pieces: Iterable[str]) -> list[int]:
        """The ids of pre-tokens already split (encode_with_unstable's stable part)."""

    def merge_bytes(self, data: bytes) -> list[int]:
        """The ids of raw bytes by merge rank alone, no pre-tokens (encode_bytes)."""

    def trie_ids(self, data: bytes) -> list[int]:
        """merge_bytes's ids by the compiled core's trie alone: tests check its trie by it."""

    @staticmethod
    def pretokenize(pattern: str | Pipeline, text: str) -> list[str]:
        """The pre-tokens of text as this core splits them: always ``pretokenizer``'s."""

    @staticmethod
    def flatten(windows: Iterable[Iterable[int]],
                estimate: Callable[[int], int] | None = None) -> Iterator[int]:
        """The ids of id sequences in a row, length hint by `estimate`: encode_iterable's."""

    def reserve(self, threads: int) -> None:
        """Prepare for `threads` threads encoding at once (a warm cache each, in C)."""

    def packer(self, itemsize: int) -> Callable[[str], bytes]:
        """One thread's function text -> pack_ids(encode_text(text)): encode_files' work."""

    def pack_text(self, text: str, itemsize: int, stop: Iterable[str] = ()) -> Any:
        """pack_ids(encode_text(text), itemsize), no list of ids in C: encode_to_numpy's;
        None if the repaired text holds a str of `stop` (the compiled core looks in its
        UTF-8, one memchr pass per distinct first byte).  A bytes-like object: a long
        text's 4-byte ids may come back in the buffer the core wrote them to."""

    # ---- decoding, and the model it was built from -------------------------

    def decode_bytes(self, ids: list[int]) -> bytes | None:
        """The bytes of int ids; None if one is unknown (the Tokenizer then says which)."""

    def tokens(self) -> dict[int, bytes]:
        """id -> bytes of every token but the specials, in id order (the model)."""

    def merges(self) -> list[tuple[int, int, int]]:
        """The merges in rank order as (left id, right id, merged id) (the model)."""

    # ---- start-up: the C readers (this module's core has none) -------------

    @staticmethod
    def tiktoken_model(source: str | dict[bytes, int]) -> Any | None:
        """A .tiktoken text or ranks dict read in C into a model, or None if not plain."""

    @staticmethod
    def native_model(text: str, start: int) -> tuple[Any, int] | None:
        """A native file's tokens and merges from `start` read in C: (model, end) or None."""

    @classmethod
    def from_model(cls, pattern: str | Pipeline, model: Any,
                   specials: dict[str, int]) -> CoreProtocol:
        """A core from what tiktoken_model / native_model read; TypeError for other input."""

    # ---- training and files ------------------------------------------------

    @staticmethod
    def counter(pattern: str | Pipeline) -> Any:
        """A pre-token counter: add, pack, add_packed, to_dict, clear, len (training)."""

    @staticmethod
    def learn_merges(counts: dict[bytes, int] | Any, n_merges: int, min_frequency: int,
                     max_token_bytes: int | None,
                     progress: Callable[[str, int, int], Any] | None = None,
                     consume: bool = True, tie_break: str = "bytes") -> list[tuple[int, int]]:
        """The merge loop (the training rule) over counts: the merges as pairs of ids."""

    @staticmethod
    def repair(text: str) -> str:
        """text with each lone surrogate replaced by U+FFFD: what is encoded."""

    @staticmethod
    def pack_ids(ids: list[int], itemsize: int) -> bytes:
        """ids as little-endian unsigned ints of `itemsize` (2 or 4) bytes."""

    @staticmethod
    def check_model(pattern: str | Pipeline, ranks: dict[bytes, int] | None,
                    merges: list[tuple[int, int, int]] | None, specials: dict[str, int],
                    is_token: Callable[[int], bool] | None = None) -> None:
        """What a core checks first on what it is built from (TypeError / ValueError)."""

    @staticmethod
    def check_learn_options(n_merges: int, min_frequency: int,
                            max_token_bytes: int | None, tie_break: str = "bytes") -> None:
        """What learn_merges checks first on its options, in both cores."""


class Core:
    """The core in pure Python: it keeps ``CoreProtocol`` (the contract, member
    by member) and is the reference the compiled ``bpe.Core`` is tested
    against.  It merges each pre-token by rank (a heap for long ones) through
    one cache for all threads, holds the GIL while it encodes, and has no C
    readers (``tiktoken_model`` and ``native_model`` answer None).

    >>> core = Core(PATTERNS["gpt2"], {bytes([b]): b for b in range(256)} | {b"hi": 256},
    ...             [(104, 105, 256)], {})
    >>> core.encode_text("hi hi"), core.encode_pieces(["hi", " hi"]), core.decode_bytes([256, 33])
    ([256, 32, 256], [256, 32, 256], b'hi!')
    """

    releases_gil = False
    pretokenizer = "regex"

    def __init__(self, pattern, ranks, merges, specials):
        _check_core_model(pattern, ranks, merges, specials)
        self._pattern = pattern
        self._split = pretokenizer(pattern)
        self._encoder = ranks
        self._byte_ids = [ranks[bytes([b])] for b in range(256)]
        self._identity_bytes = self._byte_ids == list(range(256))
        self._rank_pair = [(a, b) for a, b, _ in merges]
        self._rank_id = [m for _, _, m in merges]
        self._pair_rank = {pair: r for r, pair in enumerate(self._rank_pair)}
        self._irregular = _irregular(self._rank_pair, self._rank_id)
        self._decoder = {i: t for t, i in ranks.items()}
        for s, i in reversed(specials.items()):  # an id's first name decodes it
            self._decoder[i] = s.encode("utf-8")
        self._cache = {}

    counter = staticmethod(_Counter)
    learn_merges = staticmethod(_learn_merges)
    check_model = staticmethod(_check_core_model)
    check_learn_options = staticmethod(_check_learn_options)
    repair = staticmethod(_repair)
    pack_ids = staticmethod(_pack_ids)

    @staticmethod
    def flatten(windows, estimate=None):
        return _Flattened.from_iterable(windows)

    @staticmethod
    def tiktoken_model(source):
        return None  # no C reader: the Tokenizer reads the ranks itself

    @staticmethod
    def native_model(text, start):
        return None  # likewise

    @classmethod
    def from_model(cls, pattern, model, specials):
        raise TypeError(f"{cls.__module__}.Core reads no models (its tiktoken_model and "
                        f"native_model answer None): it takes none, not "
                        f"{type(model).__name__}")

    def _bpe(self, piece):
        """Ids of one pre-token (str), through the cache."""
        data = piece.encode("utf-8")
        i = self._encoder.get(data)
        if i is not None:
            ids = [i]
        else:
            ids = list(data) if self._identity_bytes else [self._byte_ids[b] for b in data]
            ids = self._merge(ids)
        if len(piece) <= _CACHE_MAX_LEN:
            cache = self._cache
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[piece] = ids
        return ids

    def _merge(self, ids):
        if len(ids) <= _SHORT and not self._irregular:
            return _bpe_short(ids, self._pair_rank, self._rank_pair, self._rank_id)
        return _bpe_long(ids, self._pair_rank, self._rank_id)

    def merge_bytes(self, data):
        return self._merge([self._byte_ids[b] for b in data])

    def trie_ids(self, data):
        return self.merge_bytes(data)  # no trie here: the rank merge it must equal

    @staticmethod
    def pretokenize(pattern, text):
        return pretokenizer(pattern)(_repair(text))

    def encode_pieces(self, pieces):
        out = []
        cache_get = self._cache.get
        bpe = self._bpe
        extend = out.extend
        for piece in pieces:
            ids = cache_get(piece)
            if ids is None:
                ids = bpe(piece)
                cache_get = self._cache.get
            extend(ids)
        return out

    def encode_text(self, text):
        return self.encode_pieces(self._split(_repair(text)))

    def reserve(self, threads):
        _operator.index(threads)  # one cache, and this core encodes in one thread at a time

    def encode_texts(self, texts, stop=()):
        out = []
        stop = _stop_names(stop)
        for text in texts:
            if any(name in text for name in stop):
                break
            out.append(self.encode_pieces(self._split(text)))
        return out

    def encode_prefix(self, text, limit):
        if self._pattern not in _FILE_CUTS:
            raise ValueError("encode_prefix needs the gpt2, cl100k, o200k or words pattern")
        keep, cut = [], 0
        for m in _compile_pattern(self._pattern).finditer(text):
            if m.end() > limit:
                break
            keep.append(m.group())
            cut = m.end()
        return cut, self.encode_pieces(keep)

    def decode_bytes(self, ids):
        if set(map(type, ids)) - {int}:
            return None  # True would be found as id 1
        try:
            return b"".join(map(self._decoder.__getitem__, ids))
        except KeyError:
            return None

    def packer(self, itemsize):
        _pack_ids([], itemsize)  # the same check as the compiled core's, before any text
        return lambda text: _pack_ids(self.encode_text(text), itemsize)

    def pack_text(self, text, itemsize, stop=()):
        stop = _stop_names(stop)
        text = _repair(text)
        if any(name in text for name in stop):
            return None
        return _pack_ids(self.encode_pieces(self._split(text)), itemsize)

    def tokens(self):
        return {i: t for t, i in sorted(self._encoder.items(), key=_operator.itemgetter(1))}

    def merges(self):
        return [(a, b, m) for (a, b), m in zip(self._rank_pair, self._rank_id)]


# --------------------------------------------------------------------------
# The tokenizer's own API: construct, train, encode, decode, special tokens,
# save and load.  The extras below add their methods to it as mixins; the
# public class, Tokenizer, is composed at the end of the extras.
# --------------------------------------------------------------------------


def _check_tokens(tokens):
    """The encoder (bytes -> id) of a vocabulary (id -> bytes) that holds
    every single byte and no token twice."""
    encoder = {}
    for i, t in tokens.items():
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            raise ValueError(f"token id {_short(i)} is not an int in [0, 2**31)")
        if not isinstance(t, bytes) or not t:
            raise ValueError(f"token {i} must be non-empty bytes, not {_short(t)}")
        other = encoder.setdefault(t, i)
        if other != i:
            raise ValueError(f"token {_short(t)} appears twice, as ids {other} and {i}")
    missing = [b for b in range(256) if bytes([b]) not in encoder]
    if missing:
        raise ValueError(f"the vocabulary lacks {len(missing)} single bytes, e.g. "
                         f"0x{missing[0]:02x}")
    return encoder


def _check_merges(merges, encoder):
    """(rank -> pair of ids, rank -> merged id) of merges (pairs of bytes)
    whose results and parts are tokens, no pair twice.  Several merges may
    make the same token, and a merge may join a token that a later merge
    makes: merging by lowest rank gives them a meaning (tiktoken's and
    tokenizers'), and real vocabularies have them (see _irregular)."""
    pair_rank, rank_pair, rank_id = {}, [], []
    for rank, merge in enumerate(merges):
        if not (isinstance(merge, (tuple, list)) and len(merge) == 2
                and all(isinstance(x, bytes) for x in merge)):
            raise ValueError(f"merge {rank} must be a pair of bytes, not {_short(merge)}")
        left, right = merge
        new = encoder.get(left + right)
        if new is None:
            raise ValueError(f"merge {rank} {_short(merge)}: {_short(left + right)} is not "
                             "in the vocabulary")
        ids = []
        for part in (left, right):
            i = encoder.get(part)
            if i is None:
                raise ValueError(f"merge {rank} {_short(merge)}: {_short(part)} is not in the "
                                 "vocabulary")
            ids.append(i)
        pair = (ids[0], ids[1])
        if pair in pair_rank:
            raise ValueError(f"merge {rank} {_short(merge)} repeats merge {pair_rank[pair]}")
        pair_rank[pair] = rank
        rank_pair.append(pair)
        rank_id.append(new)
    return rank_pair, rank_id


def _irregular(rank_pair, rank_id):
    """Whether merges by rank over these merges differ from replaying them in
    order: a token made by several merges (a tokenizer.json that lists every
    split of every token), or a merge that joins a token only a later merge
    makes (tiktoken's rule on a rank table where a token's lower-ranked
    pieces are three or more, but a higher-ranked token rejoins them: 90 of
    Llama 3's).  Such merges are merged one pair at a time, lowest rank
    first, the leftmost of equals (never all of a pair's places at once)."""
    made = {}
    for rank, m in enumerate(rank_id):
        if made.setdefault(m, rank) != rank:
            return True
    return any(made.get(a, -1) >= rank or made.get(b, -1) >= rank
               for rank, (a, b) in enumerate(rank_pair))


def _check_special_ids(specials, is_token):
    """Special tokens (str -> id) must have ids that no token (`is_token(id)`)
    takes.  Several special tokens may share an id, as tiktoken allows (its
    o200k_harmony gives 200018 two names): each name encodes to it, and the
    first name given decodes it (what tiktoken decodes there)."""
    for s, i in specials.items():
        if not isinstance(s, str) or not s:
            raise ValueError(f"special token {_short(s)} must be a non-empty str")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            raise ValueError(f"special token {_short(s)} has a bad id {_short(i)} (ids are ints in "
                             f"[0, 2**31))")
        if is_token(i):
            raise ValueError(f"special token {_short(s)} has id {i}, which is already taken")


def _assign_specials(special_tokens, token_at, id_of, max_id):
    """(specials, taken): each special token's id, and the ids of the tokens
    that become special tokens.  An explicit id (a mapping), or the id of
    the token with the same bytes, or the next id after `max_id`.
    `token_at(id)` and `id_of(bytes)` look the vocabulary up (None: none)."""
    specials, taken = {}, []
    special_tokens = _special_set(special_tokens)
    if isinstance(special_tokens, _abc.Mapping):
        for s, i in special_tokens.items():
            _check_special_text(s)
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"special_tokens must map str to int ids, not {_short(s)} -> "
                                f"{_short(i)}")
            if not 0 <= i < _MAX_ID:
                raise ValueError(f"special token {_short(s)} has id {i}, outside [0, 2**31)")
            if token_at(i) == s.encode("utf-8"):
                taken.append(i)
            specials[s] = i
    else:
        names = _check_specials(special_tokens)
        next_id = max_id + 1
        for s in names:
            i = id_of(s.encode("utf-8"))
            if i is not None and i not in taken:
                taken.append(i)
            else:
                i = next_id
                next_id += 1
            specials[s] = i
    return specials, taken


class _FromCore:
    """One of a Tokenizer's copies of its model (tokens, merges, their
    tables, the pattern's regex), made when it is first read: a Tokenizer
    read by a core's C reader starts with the core alone.  A constructor
    that has the copy sets it instead (an instance attribute hides this)."""

    def __init__(self, make):
        self.make = make

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, tok, owner=None):
        if tok is None:
            return self
        value = tok.__dict__[self.name] = self.make(tok)
        return value


def _decoder_of(tok):
    decoder = dict(tok._tokens)
    for s, i in reversed(tok._specials.items()):  # an id's first name decodes it
        decoder[i] = s.encode("utf-8")
    return decoder


class UnknownTokenError(KeyError, ValueError):
    """An id that is not in the vocabulary: a ValueError, and the KeyError
    tiktoken raises for one.

    >>> Tokenizer.from_merges([]).decode([300])
    Traceback (most recent call last):
    ...
    bpe_fallback.UnknownTokenError: unknown token id 300
    """

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class _StreamSource:
    """encode_iterable's input: its chunks, how many were taken, and from
    them an estimate of the stream's ids (what list() asks for first, to size
    its result once instead of growing it step by step)."""

    def __init__(self, iterable):
        self._chunks = iter(iterable)
        self.taken = 0

    def take(self, k):
        """The next k chunks (fewer at the end)."""
        batch = list(_itertools.islice(self._chunks, k))
        self.taken += len(batch)
        return batch

    def estimate(self, ids):
        """The stream's ids, from the `ids` of the chunks taken so far and the
        input's own length hint (none: `ids`, nothing more is known)."""
        try:
            rest = _operator.length_hint(self._chunks, 0)
        except Exception:  # noqa: BLE001 - a hint is optional; a broken one is none
            rest = 0
        if not self.taken or rest <= 0:
            return ids
        return ids + ids * rest // self.taken


class _TokenizerBase:
    """The tokenizer's own API: construct, train, encode, decode, special
    tokens, native save and load, over a model (pattern, tokens, merges,
    special tokens) validated once and a core that does the hot work.  The
    public class, Tokenizer (after the extras, below), is this class and the
    extras' mixins; its docstring tells how an instance is made."""

    # ---- construction: every instance's state comes from _from_core ------

    @classmethod
    def _from_core(cls, pattern, core, specials):
        """A new Tokenizer: the one place an instance's state is set (the
        pattern, the special tokens, a built core).  Its copies of the model
        (tokens, merges, their tables) come from the core when first read
        (_FromCore), unless the caller has them and sets them (_create)."""
        self = object.__new__(cls)
        self._pattern = pattern
        self._specials = dict(specials)
        self._all_specials = frozenset(self._specials)
        self._special_res = {}
        self._core = core
        return self

    _CORE_STATE = frozenset(("_pattern", "_specials", "_all_specials", "_special_res", "_core"))
    # the private names the library's classes declare: set where the public class is
    # composed (Tokenizer), so a subclass's own private attributes are not among them
    _library_names = frozenset()

    @classmethod
    def _own_state(cls, tok):
        """The keys of tok's dict that are the library's: what _from_core sets,
        and every private name declared on the class (the model's copies and
        caches, a name); the others (an `encode` a program wraps, say) are a
        subclass's or a program's own."""
        return [k for k in tok.__dict__ if k in cls._CORE_STATE
                or (k[:1] == "_" and k in cls._library_names)]

    @classmethod
    def _sharing(cls, tok):
        """A new instance of `cls` (whose core_class is tok's) holding tok's
        model: the same core and every table tok has built so far, name and
        all, but none of a subclass's own attributes.  The registry and
        unpickling hand these out: one model per process."""
        new = object.__new__(cls)
        new.__dict__.update({k: tok.__dict__[k] for k in cls._own_state(tok)})
        return new

    @classmethod
    def _create(cls, pattern, tokens, merges, specials):
        """Validate a model, build its core and a Tokenizer around it.

        pattern: regex str; tokens: dict id -> bytes (not the specials);
        merges: list of (bytes, bytes), each result in `tokens`;
        specials: dict str -> id, ids not in `tokens`."""
        encoder = _check_tokens(tokens)
        rank_pair, rank_id = _check_merges(merges, encoder)
        _check_special_ids(specials, tokens.__contains__)
        self = cls._from_core(pattern, cls.core_class(
            pattern, encoder, [(a, b, m) for (a, b), m in zip(rank_pair, rank_id)], specials),
            specials)
        self._tokens = dict(tokens)
        self._merges = [tuple(m) for m in merges]
        self._encoder = encoder
        self._rank_pair = rank_pair
        self._rank_id = rank_id
        return self

    @classmethod
    def _from_model(cls, pattern, model, special_tokens):
        """A Tokenizer from a model a core's C reader gave (see CoreProtocol), with
        special tokens as _with_specials gives them; None when a special
        token takes a token's place (the caller then reads the input itself)."""
        specials, taken = _assign_specials(special_tokens, model.token, model.id_of,
                                           model.max_id)
        if taken:
            return None
        _check_special_ids(specials, model.has_id)
        return cls._from_core(pattern, cls.core_class.from_model(pattern, model, specials),
                              specials)

    # Every other attribute an instance may set on itself is declared on the class
    # (a _FromCore copy above or below, a cache a method fills, what the registry
    # marks), so that __init__ can tell the model's state from a subclass's own.
    _special_ids = _sorted_token_bytes = _state = _sha256 = _registered = None

    _findall = _FromCore(lambda tok: pretokenizer(tok._pattern))
    _tokens = _FromCore(lambda tok: tok._core.tokens())
    _merges = _FromCore(lambda tok: [(tok._tokens[a], tok._tokens[b]) for a, b in tok._rank_pair])
    _encoder = _FromCore(lambda tok: {t: i for i, t in tok._tokens.items()})
    _decoder = _FromCore(_decoder_of)
    _rank_pair = _FromCore(lambda tok: [(a, b) for a, b, _ in tok._core.merges()])
    _rank_id = _FromCore(lambda tok: [m for _, _, m in tok._core.merges()])

    @classmethod
    def _from_trained(cls, pattern, merge_ids, specials):
        tokens = {i: bytes([i]) for i in range(256)}
        merges = []
        for k, (a, b) in enumerate(merge_ids):
            merges.append((tokens[a], tokens[b]))
            tokens[256 + k] = tokens[a] + tokens[b]
        first = 256 + len(merge_ids)
        return cls._create(pattern, tokens, merges, {s: first + i for i, s in enumerate(specials)})

    # ---- training -------------------------------------------------------

    #: the class of the core this Tokenizer's instances hold (``bpe.Tokenizer``
    #: has the compiled one; nothing else differs)
    core_class = Core

    @classmethod
    def count_pretokens(cls, texts, *, pattern="gpt2", special_tokens=()):
        """Count the pre-tokens of `texts` (a str or an iterable of str
        documents): the counting step of training.  Counts from several
        workers merge by addition and feed ``Tokenizer.train_from_counts``.
        (The module-level ``count_pretokens`` is this method.)

        >>> sorted(Tokenizer.count_pretokens(["a cat", "a dog"]).items())
        [(b' cat', 1), (b' dog', 1), (b'a', 2)]
        """
        pattern = resolve_pattern(pattern)
        special_re = _special_regex(_check_specials(special_tokens))
        core = cls.core_class
        counter = core.counter(pattern)
        if isinstance(texts, str):
            texts = (texts,)
        for text in texts:
            _count_into(counter, text, core.repair, special_re)
        return counter.to_dict()

    @staticmethod
    def _train_options(vocab_size, pattern, special_tokens, min_frequency, max_token_bytes,
                       tie_break="bytes"):
        _check_tie_break(tie_break)
        pattern = resolve_pattern(pattern)
        specials = _check_specials(special_tokens)
        _check_int("vocab_size", vocab_size, 256 + len(specials))
        if vocab_size > _MAX_ID:
            raise ValueError(f"vocab_size {vocab_size} would need ids of 2**31 or more "
                             f"(ids are int32)")
        _check_int("min_frequency", min_frequency, 0)
        if max_token_bytes is not None:
            _check_int("max_token_bytes", max_token_bytes, 1)
        return pattern, specials

    @classmethod
    def _train_counts(cls, counts, vocab_size, pattern, specials, min_frequency, max_token_bytes,
                      progress, consume=True, tie_break="bytes"):
        n_merges = vocab_size - 256 - len(specials)
        merge_ids = cls.core_class.learn_merges(counts, n_merges, min_frequency, max_token_bytes,
                                                _reporter(progress), consume, tie_break)
        return cls._from_trained(pattern, merge_ids, specials)

    @classmethod
    def train(cls, corpus, vocab_size, *, pattern="gpt2", special_tokens=(), min_frequency=2,
              max_token_bytes=None, progress=False, tie_break="bytes"):
        """Train on a str, or an iterable of str documents (streamed; a
        pre-token never spans two documents).

        ``tie_break``: which of the pairs of the highest count is merged:
        ``"bytes"`` (the default), the greatest ``(left_bytes, right_bytes)``;
        ``"rustbpe"``, the smallest ``(left_id, right_id)``, rustbpe's rule
        (with ``min_frequency=1``, rustbpe's merges exactly).

        >>> tok = Tokenizer.train(["hello hello", "hello world"], 258)
        >>> tok.merges
        [(b'l', b'o'), (b'l', b'lo')]
        >>> Tokenizer.train(["hello hello", "hello world"], 258, tie_break="rustbpe").merges
        [(b'e', b'l'), (b'h', b'el')]
        """
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes, tie_break)
        progress = _reporter(progress)
        counts = cls.count_pretokens(corpus, pattern=pattern, special_tokens=specials)
        return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress, tie_break=tie_break)

    @classmethod
    def train_from_counts(cls, counts, vocab_size, *, pattern="gpt2", special_tokens=(),
                          min_frequency=2, max_token_bytes=None, progress=False,
                          tie_break="bytes"):
        """Train on pre-token counts (bytes or str -> int), from any source.

        >>> Tokenizer.train_from_counts({"abab": 3, b"ab": 1}, 257).merges
        [(b'a', b'b')]
        """
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes, tie_break)
        if not isinstance(counts, _abc.Mapping):
            raise TypeError(f"counts must be a mapping of pre-token (bytes or str) -> int, "
                            f"not {type(counts).__name__}")
        if (type(counts) is dict and set(map(type, counts)) <= {bytes}
                and set(map(type, counts.values())) <= {int}
                and min(counts.values(), default=0) >= 0):
            # already bytes -> int: the merge loop reads them as they are, without a
            # normalized copy (tens of millions of pre-tokens stay one dict)
            return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                     max_token_bytes, progress, consume=False,
                                     tie_break=tie_break)
        clean = {}
        for word, n in counts.items():
            if isinstance(word, str):
                word = _repair(word).encode("utf-8")
            elif not isinstance(word, bytes):
                raise TypeError(f"pre-tokens must be bytes or str, not {type(word).__name__}")
            if isinstance(n, bool) or not isinstance(n, int):
                raise TypeError(f"the count of {word!r} must be an int, not {type(n).__name__}")
            if n < 0:
                raise ValueError(f"the count of {word!r} is negative: {n}")
            if n and word:
                clean[word] = clean.get(word, 0) + n
        return cls._train_counts(clean, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress, tie_break=tie_break)

    # ---- building from parts ---------------------------------------------

    @classmethod
    def from_merges(cls, merges, *, vocab=None, pattern="gpt2", special_tokens=None):
        """Build from ordered merges (pairs of bytes).  Without `vocab`, ids
        are trained-style (bytes, then 256 + k); with `vocab` (dict id ->
        bytes) its ids are kept.  A special token whose bytes are in vocab
        keeps that id; the others take the next ids.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode("hi"), tok.special_tokens
        ([256], {'<s>': 257})
        """
        pattern = resolve_pattern(pattern)
        if isinstance(merges, (str, bytes)) or not isinstance(merges, _abc.Iterable):
            raise TypeError("merges must be a list of (bytes, bytes) pairs, not "
                            f"{type(merges).__name__}")
        merges = [tuple(m) if isinstance(m, (tuple, list)) else m for m in merges]
        for k, m in enumerate(merges):
            if not (isinstance(m, tuple) and len(m) == 2 and all(isinstance(x, bytes) for x in m)):
                raise TypeError(f"merge {k} must be a pair of bytes, not {_short(m)}")
        if vocab is None:
            tokens = {i: bytes([i]) for i in range(256)}
            for k, m in enumerate(merges):
                tokens[256 + k] = m[0] + m[1]
        else:
            if not isinstance(vocab, _abc.Mapping):
                raise TypeError(f"vocab must be a dict of id -> bytes, not {type(vocab).__name__}")
            tokens = dict(vocab)
            for i, t in tokens.items():
                if isinstance(i, bool) or not isinstance(i, int) or not isinstance(t, bytes):
                    raise TypeError(f"vocab must map int ids to bytes, not {_short(i)} -> "
                                    f"{_short(t)}")
        return cls._with_specials(pattern, tokens, merges, special_tokens)

    @classmethod
    def _with_specials(cls, pattern, tokens, merges, special_tokens):
        """Give each special token an id: an explicit one (a mapping), the id
        of a token with the same bytes (which then becomes the special), or
        the next free id."""
        tokens = dict(tokens)
        by_bytes = {} if isinstance(special_tokens, _abc.Mapping) else {
            t: i for i, t in tokens.items()}
        specials, taken = _assign_specials(special_tokens, tokens.get, by_bytes.get,
                                           max(tokens, default=-1))
        for i in taken:
            del tokens[i]
        return cls._create(pattern, tokens, merges, specials)

    # ---- encoding -------------------------------------------------------

    def _encode_pieces(self, pieces, out):
        out.extend(self._core.encode_pieces(pieces))
        return out

    def _encode_chunk(self, text, out):
        """Encode text that holds no special tokens (already repaired)."""
        out.extend(self._core.encode_text(text))
        return out

    def encode_ordinary(self, text):
        """Encode `text`, treating special-token text as ordinary text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode_ordinary("hi<s>")
        [256, 60, 115, 62]
        """
        return self._core.encode_text(text)  # the core repairs the text

    def _policy(self, allowed_special, disallowed_special):
        """(allowed, disallowed): frozensets of special-token names."""
        if allowed_special is _NONE_ALLOWED and type(disallowed_special) is str \
                and disallowed_special == "all":   # the defaults: nothing to work out
            return _NONE_ALLOWED, self._all_specials
        specials = self._specials
        if allowed_special == "all":
            allowed = frozenset(specials)
        else:
            allowed = _name_set(allowed_special, "allowed_special", 'must be "all" or a set of str')
            if not allowed <= specials.keys():  # tiktoken ignores the others
                allowed = frozenset(allowed.intersection(specials))
        if disallowed_special == "all":
            disallowed = frozenset(specials) - allowed
        else:
            disallowed = _name_set(disallowed_special, "disallowed_special",
                                   'must be "all" or a collection of str')
        return allowed, disallowed

    def _special_re(self, names):
        rx = self._special_res.get(names)
        if rx is None:
            rx = self._special_res[names] = _special_regex(names)
        return rx

    _FEW_SPECIALS = 8  # up to this many names are looked for one by one, not by a regex

    def _check_disallowed(self, text, disallowed, start=0):
        if disallowed:
            if len(disallowed) <= self._FEW_SPECIALS:  # str's own search, no regex call
                # one scan per distinct start ("<|" for all of OpenAI's): no start, no name
                if not any(head in text for head in {name[:2] for name in disallowed}):
                    return
            m = self._special_re(disallowed).search(text, start, concurrent=True)
            if m:  # tiktoken's words (programs written for it show them to their users)
                token = m.group()
                raise ValueError(
                    f"Encountered text corresponding to disallowed special token {token!r}.\n"
                    f"If you want this text to be encoded as a special token, pass it to "
                    f"`allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
                    f"If you want this text to be encoded as normal text, disable the check for "
                    f"this token by passing `disallowed_special=(enc.special_tokens_set - "
                    f"{{{token!r}}})`.\n"
                    f"To disable this check for all special tokens, pass "
                    f"`disallowed_special=()`.\n")

    def _core_looks(self, allowed, disallowed):
        """Whether the core looks for the disallowed names as it encodes (its
        `stop`): a few of them, and no allowed ones to split by."""
        return not allowed and len(disallowed) <= self._FEW_SPECIALS

    def _stopped(self, text, disallowed):
        """Raise the ValueError of a text the core stopped at: it holds a
        disallowed name."""
        self._check_disallowed(text, disallowed)
        raise AssertionError("the core stopped at a text the policy allows")

    def _encode_allowed(self, text, allowed, out):
        """Append the ids of `text` to `out`, splitting on the allowed special
        tokens; return the list (a compiled backend may return a new one when
        `out` is empty: use the result)."""
        if not allowed:
            if out:
                return self._encode_chunk(text, out)
            return self._core.encode_text(text)  # no copy
        specials = self._specials
        pos = 0
        for m in self._special_re(allowed).finditer(text):
            self._encode_chunk(text[pos:m.start()], out)
            out.append(specials[m.group()])
            pos = m.end()
        return self._encode_chunk(text[pos:], out)

    def encode(self, text, *, allowed_special=_NONE_ALLOWED, disallowed_special="all"):
        """Encode `text` with tiktoken's special-token policy: a disallowed
        special token in the text raises ValueError; allowed ones ("all" or a
        set of names) become their ids; ``disallowed_special=()`` lets them
        through as ordinary text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode("hi<s>", allowed_special={"<s>"})
        [256, 257]
        """
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        text = self._core.repair(text)
        if disallowed and self._core_looks(allowed, disallowed):
            done = self._core.encode_texts((text,), tuple(disallowed))
            if not done:
                self._stopped(text, disallowed)
            return done[0]
        self._check_disallowed(text, disallowed)
        return self._encode_allowed(text, allowed, [])

    def encode_batch(self, texts=_UNSET, *, num_threads=None, allowed_special=_NONE_ALLOWED,
                     disallowed_special="all", text=_UNSET):
        """``[encode(t) for t in texts]``, on `num_threads` threads (default:
        the number of CPUs, never more) where the core encodes without the GIL
        (the compiled one), else in this thread.  ``text=``: tiktoken's
        keyword for the texts.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.encode_batch(["hi", "ih"], num_threads=2)
        [[256], [105, 104]]
        """
        if texts is _UNSET or text is not _UNSET:
            texts = _either("encode_batch", "texts", texts, "text", text)
        num_threads = _thread_count(num_threads)
        texts = _as_list(texts, "encode_batch expects a list of str")
        if not texts:
            return []
        cpus = _os.cpu_count() or 1
        threads = min(num_threads or cpus, cpus, len(texts)) if self._core.releases_gil else 1
        policy = self._policy(allowed_special, disallowed_special)
        if threads <= 1:
            results = [None] * len(texts)
            for start in range(0, len(texts), 64):
                failed = self._encode_block(texts, start, min(start + 64, len(texts)), policy,
                                            results)
                if failed is not None:
                    raise failed[1]
            return results
        return self._encode_batch_in_threads(texts, threads, policy)

    def _encode_block(self, texts, start, end, policy, results, stop=None):
        """results[start:end] = what encode gives for texts[start:end] (the
        special-token policy already resolved), the texts with no allowed
        special token in one call of the core.  None, or (i, the exception
        encode raises for texts[i]) for the first text that fails: the texts
        before it are encoded, those after it not.  `stop`: a list whose
        first item is an index where to stop (another thread failed there)."""
        allowed, disallowed = policy
        repair = self._core.repair
        core_looks = self._core_looks(allowed, disallowed)
        ready, failed = [], None
        for i in range(start, end):
            if stop is not None and i >= stop[0]:
                end = i
                break
            try:
                text = repair(texts[i])
                if not core_looks:
                    self._check_disallowed(text, disallowed)
            except BaseException as e:  # noqa: B036 - given back, raised by the caller
                failed, end = (i, e), i
                break
            ready.append(text)
        try:
            if allowed:
                results[start:end] = [self._encode_allowed(t, allowed, []) for t in ready]
                return failed
            done = self._core.encode_texts(ready, tuple(disallowed) if core_looks else ())
            results[start : start + len(done)] = done
        except BaseException as e:  # noqa: B036 - the first text of the block takes it
            return start, e
        if len(done) < len(ready):  # that text holds a disallowed special token
            try:
                self._stopped(ready[len(done)], disallowed)
            except ValueError as e:
                return start + len(done), e
        return failed

    def _encode_batch_in_threads(self, texts, threads, policy):
        """encode_batch on `threads` threads (this one among them), which take
        the next few texts each as they become free: unequal texts or a
        busier CPU do not leave one thread idle while another has half the
        batch.  An error is the one encode would raise first in list order:
        the texts after a failed one are not started, those before it finish."""
        import threading

        n = len(texts)
        results = [None] * n
        errors = {}  # index -> the exception encode raised
        # Blocks of texts, smaller towards the end (a quarter of a thread's
        # share of what is left, at most 64), so that the threads finish together.
        blocks, start = [], 0
        while start < n:
            size = max(1, min(64, (n - start) // (threads * 4)))
            blocks.append((start, min(start + size, n)))
            start += size
        ahead = iter(blocks)  # next() is atomic: each block goes to one thread
        failed = [n]  # the smallest index that failed

        def work():
            for start, end in ahead:
                if start >= failed[0]:
                    return
                failure = self._encode_block(texts, start, end, policy, results, failed)
                if failure is not None:
                    i, errors[i] = failure
                    failed[0] = min(failed[0], i)
                    return

        self._core.reserve(threads)
        helpers = [threading.Thread(target=work, name=f"encode_batch-{k}", daemon=True)
                   for k in range(threads - 1)]
        for t in helpers:
            t.start()
        try:
            work()
        except BaseException:
            failed[0] = -1  # Ctrl-C between two texts: the other threads take no more
            raise
        finally:
            for t in helpers:
                t.join()
        if errors:
            raise errors[min(errors)]
        return results

    _STREAM_BLOCK = 1 << 15   # characters encode_iterable gathers before it cuts
    _STREAM_MARGIN = 32        # characters kept back so that a cut never changes a pre-token

    def encode_iterable(self, iterable, *, allowed_special=_NONE_ALLOWED, disallowed_special="all"):
        """Yield the ids of ``encode("".join(iterable))``, holding only a small
        window of text: it is cut where no pre-token or special token can
        change (for "bytes" and custom patterns, only at special tokens and,
        where a pattern of the GPT family allows it, between a letter or digit
        and a line feed, as files are).  The
        special-token policy is that of encode, applied to the raw text.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> list(tok.encode_iterable(["h", "i h", "i"]))
        [256, 32, 256]
        """
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        if isinstance(iterable, str):
            iterable = (iterable,)
        source = _StreamSource(iterable)
        # the windows' ids, flattened in C (a generator per id costs as much as encoding)
        return self._core.flatten(self._stream_windows(source, allowed, disallowed),
                                  source.estimate)

    def _stream_windows(self, source, allowed, disallowed):
        """The ids of encode_iterable, a list per window of text."""
        longest = max((len(s) for s in allowed | disallowed), default=1)
        split_pretokens = self._pattern in _FILE_CUTS   # (what encode_prefix reads)
        if not split_pretokens and _cut_kind(self._pattern, tuple(self._specials)) is not None:
            split_pretokens = _line_cut(str)   # a custom pattern cut at line feeds
        parts, size = [], 0
        checked = 0  # the window's first `checked` characters were searched for disallowed ones
        block = self._STREAM_BLOCK
        take = 1
        while True:
            # small chunks are taken and joined many at a time (nothing per chunk in
            # Python), large ones one by one: a batch holds about a quarter of a window,
            # and never more than 64 chunks
            batch = source.take(take)
            if not batch:
                break
            got = self._join_chunks(batch)
            parts.append(got)
            size += len(got)
            take = max(1, min(64, self._STREAM_BLOCK * len(batch) // (4 * len(got) + 1)))
            if size < block:
                continue
            buf = self._join_chunks(parts)
            # a high surrogate at the end may pair with the next chunk's low one
            tail = buf[-1] if "\ud800" <= buf[-1] <= "\udbff" else ""
            text = self._core.repair(buf[:len(buf) - len(tail)])
            self._check_disallowed(text, disallowed, max(checked - longest + 1, 0))
            cut, out = self._stream_cut(text, longest, split_pretokens, allowed)
            rest = text[cut:] + tail
            parts, size, checked = [rest], len(rest), len(text) - cut
            # scan again only once the window has doubled: linear in the input
            # even when nothing can be cut (one long pre-token, a custom pattern)
            block = max(self._STREAM_BLOCK, 2 * size)
            yield out
        text = self._core.repair(self._join_chunks(parts))
        self._check_disallowed(text, disallowed, max(checked - longest + 1, 0))
        if split_pretokens is True and not allowed:  # the core's own sequence: flatten reads it
            # fastest
            yield self._core.encode_prefix(text, len(text))[1]
        else:
            yield self._encode_allowed(text, allowed, [])

    @staticmethod
    def _join_chunks(parts):
        """The chunks as one str (subclasses are strings); TypeError naming a chunk that is not."""
        try:
            return "".join(parts)
        except TypeError:
            bad = next(p for p in parts if not isinstance(p, str))
            raise TypeError(f"encode_iterable expects str chunks, not "
                            f"{type(bad).__name__}") from None

    def _stream_cut(self, text, longest, split_pretokens, allowed):
        """Encode a prefix of `text` after which no later text can change the
        ids; return (its length, its ids).

        Special tokens that start `longest` characters before the end are
        certain, as are pre-tokens of a named pattern that end
        _STREAM_MARGIN characters before the end of their piece: none of
        those patterns looks further ahead.  `split_pretokens` may instead be
        the regex of a custom pattern's file cuts (see _custom_cut): then the
        text is cut at the last of those before that limit."""
        limit = len(text) - longest - self._STREAM_MARGIN
        out = []
        if limit <= 0:
            return 0, out
        start, end = 0, len(text)
        if allowed:
            for m in self._special_re(allowed).finditer(text):
                if m.start() > len(text) - longest:
                    end = m.start()
                    break
                start = m.end()
        limit = min(limit, end - self._STREAM_MARGIN)
        if split_pretokens is not True and limit > start:   # a custom pattern's cuts
            cuts = split_pretokens.finditer(text, start, limit) if split_pretokens else ()
            start = max((m.end() for m in cuts), default=start)
            return start, self._encode_allowed(text[:start], allowed, out)
        out = self._encode_allowed(text[:start], allowed, out)
        if not split_pretokens or limit <= start:
            return start, out
        cut, ids = self._core.encode_prefix(text[start:end] if start or end < len(text) else text,
                                            limit - start)
        if out:
            out.extend(ids)
            return start + cut, out
        return start + cut, ids  # no copy when no special token came first

    # ---- decoding -------------------------------------------------------

    def _checked_ids(self, ids):
        """The ids as plain ints; TypeError for a non-int, ValueError for an
        id that is not in the vocabulary."""
        clean = []
        for i in ids:
            if isinstance(i, bool) or not hasattr(i, "__index__"):
                raise TypeError(f"token ids must be ints, not {type(i).__name__}: {i!r}")
            # an int subclass is its value (int's own __index__: not an override's)
            i = int.__index__(i) if isinstance(i, int) else _operator.index(i)
            if i not in self._decoder:
                raise UnknownTokenError(f"unknown token id {i}")
            clean.append(i)
        return clean

    def decode_bytes(self, ids=_UNSET, *, tokens=_UNSET):
        """The bytes of a sequence of ids (``tokens=``: tiktoken's keyword).

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_bytes([256, 33])
        b'hi!'
        """
        if ids is _UNSET or tokens is not _UNSET:
            ids = _either("decode_bytes", "ids", ids, "tokens", tokens)
        ids = ids if type(ids) is list else _as_list(ids, "ids must be a sequence of int")
        out = self._core.decode_bytes(ids)
        if out is None:  # not all plain ints of the vocabulary
            out = self._core.decode_bytes(self._checked_ids(ids))  # raises, or numpy ints made int
        return out

    def decode(self, ids=_UNSET, errors="replace", *, tokens=_UNSET):
        """Decode ids to text; invalid UTF-8 (a token split mid-character) is
        handled by `errors` (default: replaced by U+FFFD).  ``tokens=``:
        tiktoken's keyword for the ids.

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode([256, 33])
        'hi!'
        """
        if ids is _UNSET or tokens is not _UNSET:
            ids = _either("decode", "ids", ids, "tokens", tokens)
        return self.decode_bytes(ids).decode("utf-8", errors)

    def token_bytes(self, token_id):
        """The bytes of one id.

        >>> Tokenizer.from_merges([(b"h", b"i")]).token_bytes(256)
        b'hi'
        """
        return self.decode_bytes([token_id])

    # ---- properties -----------------------------------------------------

    @property
    def merges(self):
        """The merges, in order, as pairs of bytes."""
        return list(self._merges)

    @property
    def vocab(self):
        """dict id -> bytes, special tokens included as their UTF-8 bytes."""
        return dict(sorted(self._decoder.items()))

    @property
    def special_tokens(self):
        """dict special token -> id."""
        return dict(self._specials)

    @property
    def pattern(self):
        """The pre-tokenization regex."""
        return self._pattern

    @property
    def pretokenizer(self):
        """How this tokenizer splits text into pre-tokens: "native" (the
        compiled core's scanner, for the named patterns and every pattern of
        the GPT family: see ``pattern_program``) or "regex" (the ``regex``
        module, under a time limit: the pure-Python core, and patterns
        outside the family).

        >>> Tokenizer.from_merges([], pattern=r"(?<=a)b|.").pretokenizer
        'regex'
        """
        return self._core.pretokenizer

    @property
    def core(self):
        """The core this tokenizer holds (an instance of ``core_class``, which
        keeps ``CoreProtocol``), for tools that call it directly.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.core.encode_text("hi hi") == tok.encode_ordinary("hi hi")
        True
        """
        return self._core

    @property
    def vocab_size(self):
        """One more than the largest id (the size an embedding table needs)."""
        return max(self._decoder) + 1

    def __repr__(self):
        if "_name" in self.__dict__:  # named: from get_encoding, Encoding(...), or .name = ...
            return f"<Encoding {self._name!r}>"
        name = next((k for k, v in PATTERNS.items() if v == self._pattern), "custom")
        return (f"<{type(self).__module__}.Tokenizer vocab_size={self.vocab_size} "
                f"merges={len(self._merges)} specials={len(self._specials)} pattern={name}>")

    # ---- equality, the native file (pickling: with tiktoken's, below) ----

    def _model(self):
        return (self._pattern, self._tokens, self._merges, self._specials)

    def __eq__(self, other):
        if not isinstance(other, _TokenizerBase):
            return NotImplemented
        return self._model() == other._model()

    def __hash__(self):  # equal models hash alike (tiktoken's Encoding is hashable)
        return hash((self._pattern, len(self._tokens), len(self._merges),
                     frozenset(self._specials.items())))

    def save(self, path):
        """Write the native format: versioned UTF-8 text, atomically.

        >>> import os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> path = os.path.join(tempfile.mkdtemp(), "tok.bpe")
        >>> tok.save(path); Tokenizer.load(path) == tok
        True
        """
        _atomic_write(path, _native_dump(self))

    @classmethod
    def load(cls, path):
        """Read a file written by ``save``; ValueError if it is not one."""
        return cls._from_native_text(_read_text(path), path)

    @classmethod
    def _from_native_text(cls, text, where):
        tok = cls._load_plain(text, where)
        return tok if tok is not None else cls._create(*_native_parse(text, where))

    @classmethod
    def _load_plain(cls, text, where):
        """load through the core's C reader of the token and merge sections;
        None when it does not take the file (see CoreProtocol)."""
        start = text.find("\n", text.find("\n") + 1) + 1
        got = cls.core_class.native_model(text, start) if start else None
        if got is None:
            return None
        model, end = got
        try:
            pattern = _native_head(_Lines(text[:start], where))
            specials = _native_specials(_Lines(text[end:], where))
        except ValueError:
            return None  # the reference reader says what is wrong, and where
        _check_special_ids(specials, model.has_id)
        return cls._from_core(pattern, cls.core_class.from_model(pattern, model, specials),
                              specials)


# ==========================================================================
# EXTRAS: each section below extends the tokenizer; none is called from its core
# ==========================================================================

# --------------------------------------------------------------------------
# tiktoken compatibility: tiktoken.Encoding's methods, and its encodings offline
# (get_encoding: the facts of tiktoken_ext/openai_public.py)
# --------------------------------------------------------------------------


_WHITE_SPACE = _regex.compile(r"\p{White_Space}")
_DROP_CONTINUATION = _operator.methodcaller("translate", None, bytes(range(0x80, 0xC0)))


def _int_values(mapping, what):
    """`mapping` with its values as ints (operator.index: numpy's integers
    too); TypeError for a value that is not an integer."""
    if not isinstance(mapping, _abc.Mapping):
        raise TypeError(f"{what} must be a dict, not {type(mapping).__name__}")
    if all(type(v) is int for v in mapping.values()):
        return mapping
    try:
        return {k: _operator.index(v) for k, v in mapping.items()}
    except TypeError:
        bad = next(v for v in mapping.values() if not hasattr(type(v), "__index__"))
        raise TypeError(f"{what} must map to int ids, not {type(bad).__name__}: "
                        f"{_short(bad)}") from None


_U4 = None  # numpy's little-endian uint32 dtype, once encode_to_numpy has imported numpy


def _name_set(names, what, must):
    """allowed_special's or disallowed_special's names (not "all") as a
    frozenset of str; TypeError naming the argument for anything else."""
    names = frozenset(_as_list(names, f"{what} {must}"))
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must hold str, not {type(name).__name__}: {name!r}")
    return names


class _TiktokenMethods:
    """Every public method and property of tiktoken.Encoding (0.14) with the
    same names, arguments, results and errors, built on encode / encode_batch /
    decode_bytes (so the compiled backend's core does the work in both).
    Where tiktoken's behaviour is a defect these do better: surrogate pairs and
    lone surrogates never raise; a str passed where a list of str is expected
    raises TypeError instead of being encoded one character at a time."""

    _name = "bpe"
    # True on a model made from tiktoken's ranks (tiktoken's constructor, get_encoding):
    # its ids are ranks, so tiktoken's Encoding rebuilds it from them (see _reduce_patched)
    _from_ranks_exactly = None

    @classmethod
    def _from_encoding_args(cls, name, pat_str, mergeable_ranks, special_tokens,
                            explicit_n_vocab):
        """``Tokenizer(name, pat_str=..., ...)``, tiktoken's constructor: its
        arguments checked as tiktoken checks them, then from_tiktoken."""
        given = {"name": name, "pat_str": pat_str, "mergeable_ranks": mergeable_ranks,
                 "special_tokens": special_tokens}
        if all(v is None for v in given.values()):
            raise TypeError(
                "make a Tokenizer with Tokenizer.train, train_files, train_from_counts, "
                "from_merges, load, from_gpt2, from_tiktoken or from_huggingface (or as "
                "tiktoken's Encoding: Tokenizer(name, pat_str=..., mergeable_ranks=..., "
                "special_tokens=...))")
        missing = [k for k, v in given.items() if v is None]
        if missing:
            raise TypeError(f"Encoding() needs {', '.join(missing)}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if not isinstance(pat_str, str):
            raise TypeError(f"pat_str must be a str, not {type(pat_str).__name__}")
        # ids as tiktoken takes them: any integer (numpy's too), not a bool or a float
        mergeable_ranks, special_tokens = (_int_values(d, what) for d, what in (
            (mergeable_ranks, "mergeable_ranks"), (special_tokens, "special_tokens")))
        if explicit_n_vocab is not None and (isinstance(explicit_n_vocab, bool)
                                             or not hasattr(explicit_n_vocab, "__index__")):
            raise TypeError(f"explicit_n_vocab must be an int, not "
                            f"{type(explicit_n_vocab).__name__}: {_short(explicit_n_vocab)}")
        if explicit_n_vocab:  # tiktoken's check (an assert there)
            top = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
            if (len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab
                    or top != explicit_n_vocab - 1):
                raise ValueError(f"explicit_n_vocab={explicit_n_vocab}, but there are "
                                 f"{len(mergeable_ranks)} mergeable and {len(special_tokens)} "
                                 f"special tokens, the largest id {top}")
        # pat_str is a regex, as tiktoken reads it: never one of this library's names
        tok = cls._from_ranks(_check_pattern(pat_str), dict(mergeable_ranks), "ranks",
                              special_tokens)
        tok._name, tok._from_ranks_exactly = name, True
        return tok

    # the attributes programs read from an Encoding (tiktoken's README copies them)

    @property
    def _pat_str(self):
        """The pattern (tiktoken's ``Encoding._pat_str``)."""
        return self._pattern

    @property
    def _mergeable_ranks(self):
        """dict token bytes -> id of every token but the special ones (tiktoken's
        ``Encoding._mergeable_ranks``; a copy)."""
        return dict(self._encoder)

    @property
    def _special_tokens(self):
        """dict special token -> id (tiktoken's ``Encoding._special_tokens``; a copy)."""
        return dict(self._specials)

    @property
    def name(self):
        """The encoding's name (tiktoken's ``Encoding.name``): the registry name
        for ``get_encoding``, else ``"bpe"``; it can be set.

        >>> tok = Tokenizer.from_merges([])
        >>> tok.name
        'bpe'
        >>> tok.name = "mine"; tok.name
        'mine'
        """
        return self._name

    @name.setter
    def name(self, value):
        if not isinstance(value, str):
            raise TypeError(f"name must be a str, not {type(value).__name__}")
        self._name = value

    @property
    def max_token_value(self):
        """The largest id, special tokens included.

        >>> Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"]).max_token_value
        257
        """
        return max(self._decoder)

    @property
    def n_vocab(self):
        """``max_token_value + 1`` (tiktoken's name for ``vocab_size``).

        >>> Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"]).n_vocab
        258
        """
        return max(self._decoder) + 1

    @property
    def eot_token(self):
        """The id of ``<|endoftext|>``; KeyError if there is no such special token.

        >>> Tokenizer.from_merges([], special_tokens=["<|endoftext|>"]).eot_token
        256
        """
        return self._specials["<|endoftext|>"]

    @property
    def special_tokens_set(self):
        """The special tokens' names, as a set.

        >>> sorted(Tokenizer.from_merges([], special_tokens=["<a>", "<b>"]).special_tokens_set)
        ['<a>', '<b>']
        """
        return set(self._specials)

    def is_special_token(self, token):
        """Whether id `token` is a special token's (TypeError if it is not an int).

        >>> tok = Tokenizer.from_merges([], special_tokens=["<s>"])
        >>> tok.is_special_token(256), tok.is_special_token(65)
        (True, False)
        """
        token = _operator.index(token)
        ids = self.__dict__.get("_special_ids")
        if ids is None:
            ids = self._special_ids = frozenset(self._specials.values())
        return token in ids

    def encode_single_token(self, text_or_bytes):
        """The id of a text (str or bytes) that is exactly one token, special
        tokens included; KeyError if it is not one.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode_single_token("hi"), tok.encode_single_token(b"<s>")
        (256, 257)
        >>> tok.encode_single_token("hi!")
        Traceback (most recent call last):
        ...
        KeyError: b'hi!'
        """
        if isinstance(text_or_bytes, str):
            data = self._core.repair(text_or_bytes).encode("utf-8")
        elif isinstance(text_or_bytes, bytes):
            data = bytes(text_or_bytes)
        else:
            raise TypeError(f"expected str or bytes, not {type(text_or_bytes).__name__}")
        i = self._encoder.get(data)
        if i is None:
            try:
                i = self._specials.get(data.decode("utf-8"))
            except UnicodeDecodeError:
                pass
        if i is None:
            raise KeyError(data)
        return i

    def encode_ordinary_batch(self, text, *, num_threads=None):
        """``[encode_ordinary(t) for t in text]``, on `num_threads` threads
        (default: the number of CPUs; the compiled backend encodes without
        the GIL).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> tok.encode_ordinary_batch(["hi", "<s>"])
        [[256], [60, 115, 62]]
        """
        text = _as_list(text, "encode_ordinary_batch expects a list of str")
        return self.encode_batch(text, num_threads=num_threads, disallowed_special=())

    def encode_to_numpy(self, text, *, allowed_special=_NONE_ALLOWED, disallowed_special="all"):
        """``encode`` as a numpy array of uint32 (needs numpy).

        >>> Tokenizer.from_merges([(b"h", b"i")]).encode_to_numpy("hi!")
        array([256,  33], dtype=uint32)
        """
        # the policy and the text are checked before numpy is needed, as tiktoken does
        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        try:
            import numpy
        except ImportError:
            self._check_disallowed(self._core.repair(text), disallowed)
            raise ImportError("encode_to_numpy needs numpy: pip install numpy "
                              "(or use encode, which returns a list)") from None
        if self._core_looks(allowed, disallowed):
            packed = self._core.pack_text(text, 4, tuple(disallowed))
            if packed is None:
                self._stopped(self._core.repair(text), disallowed)
        else:
            text = self._core.repair(text)
            self._check_disallowed(text, disallowed)
            if allowed and self._special_re(allowed).search(text):
                packed = self._core.pack_ids(self._encode_allowed(text, allowed, []), 4)
            else:
                packed = self._core.pack_text(text, 4)
        global _U4
        if _U4 is None:
            _U4 = numpy.dtype("<u4")
        # read-only, over the packed ids (as tiktoken's over its buffer)
        return numpy.frombuffer(packed, _U4)

    def _ordinary_tail(self, text, allowed):
        """tiktoken's `_encode_native` + `_increase_last_piece_token_len`: the
        ids of `text` (already repaired and checked) and how many of the last
        ones may change if text were appended: those of the last pre-token
        (none after a special token), grown back over tokens made only of
        spaces, tabs and line feeds."""
        ids = self._encode_allowed(text, allowed, [])
        tail = text
        if allowed:
            last = None
            for last in self._special_re(allowed).finditer(text):  # noqa: B007 - the last one
                pass
            if last is not None:
                tail = text[last.end():]
        pieces = self._findall(self._last_stretch(tail)) if tail else ()
        if not pieces:
            return ids, 0
        n = len(self._encode_pieces([pieces[-1]], []))
        if n and self._is_blank(ids[-n]):
            while n < len(ids) and self._is_blank(ids[-n - 1]):
                n += 1
        return ids, n

    def _last_stretch(self, text):
        """A suffix of `text` whose pre-tokens are the last ones of `text`: from
        the last place near its end where a file may be cut (see _FILE_CUTS
        and _custom_cut), else all of it.  Spares a long text's scan."""
        cut_re = _cut_kind(self._pattern, ())
        if cut_re is not None:
            for size in (1 << 12, 1 << 16):
                if len(text) <= size:
                    break
                window = text[-size:]
                data = window.encode("utf-8")
                last = None
                for last in cut_re.finditer(data):  # noqa: B007 - the last one
                    pass
                if last is not None:
                    return window[len(data[:last.end()].decode("utf-8")):]
        return text

    def _is_blank(self, i):
        t = self._tokens.get(i)
        return t is not None and not t.translate(None, b" \t\n")

    def _bpe_bytes(self, data):
        """tiktoken's byte_pair_encode: merge by rank over raw bytes, no
        pre-tokenization, no whole-token shortcut."""
        return self._core.merge_bytes(data)

    def _sorted_tokens(self):
        """The mergeable tokens' bytes in ascending order, and the length of
        the longest (built once)."""
        tokens = self.__dict__.get("_sorted_token_bytes")
        if tokens is None:
            tokens = sorted(self._tokens.values())
            tokens = self._sorted_token_bytes = (tokens, max(map(len, tokens)))
        return tokens

    def encode_bytes(self, data):
        """Encode bytes that need not be UTF-8 (tiktoken's ``_encode_bytes``);
        special-token text is ordinary text.  Valid UTF-8 gives
        ``encode_ordinary(data.decode())``; otherwise the text before the first
        invalid byte is encoded, and its last pre-token joins the remaining
        bytes, which are merged by rank as one piece (tiktoken's rule).  Unlike
        tiktoken, bytes that start invalid are encoded too, never dropped.
        Always ``decode_bytes(encode_bytes(data)) == data``.

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.encode_bytes(b"hi \\xff")
        [256, 32, 255]
        """
        if not isinstance(data, bytes):
            raise TypeError(f"encode_bytes expects bytes, not {type(data).__name__}")
        try:
            return self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            valid = e.start
        ids, n = self._ordinary_tail(data[:valid].decode("utf-8"), frozenset())
        rest = data[valid:]
        if n:
            rest = self.decode_bytes(ids[-n:]) + rest
            del ids[-n:]
        i = self._encoder.get(rest)
        ids.extend([i] if i is not None else self._bpe_bytes(rest))
        return ids

    def _encode_bytes(self, text):
        """encode_bytes under tiktoken's name and argument (its own tests call it)."""
        return self.encode_bytes(text)

    def encode_with_unstable(self, text, *, allowed_special=_NONE_ALLOWED,
                             disallowed_special="all"):
        """Stable ids and the possible completions of the rest (tiktoken's
        rule, for completion-style decoding): returns ``(stable, completions)``
        where ``stable`` encodes a prefix of the text and each completion
        (a list of ids) continues it so that its bytes start with the whole
        text.  The completions are sorted (tiktoken's come in set order).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.encode_with_unstable("say h")
        ([115, 97, 121], [[32, 104], [32, 256]])
        """
        import bisect

        allowed, disallowed = self._policy(allowed_special, disallowed_special)
        text = self._core.repair(text)
        self._check_disallowed(text, disallowed)
        ids, n = self._ordinary_tail(text, allowed)
        if not n:
            return ids, []
        unstable = self.decode_bytes(ids[-n:])
        del ids[-n:]
        (tokens, longest), encoder, size = self._sorted_tokens(), self._encoder, len(unstable)
        found = set()
        # every token that starts with the unstable bytes
        k = bisect.bisect_left(tokens, unstable)
        while k < len(tokens) and tokens[k].startswith(unstable):
            found.add((encoder[tokens[k]],))
            k += 1
        # a token straddling each later place: retokenize prefix + token, keep
        # the ids that cover the unstable bytes (no token is longer than the
        # longest, so earlier places have none)
        for cut in range(max(1, size - longest), size):
            prefix, suffix = unstable[:cut], unstable[cut:]
            k = bisect.bisect_left(tokens, suffix)
            while k < len(tokens) and tokens[k].startswith(suffix):
                whole = prefix + tokens[k]
                k += 1
                try:
                    seq = self.encode_ordinary(whole.decode("utf-8"))
                except UnicodeDecodeError:
                    seq = self._bpe_bytes(whole)
                covered = 0
                for m, i in enumerate(seq):
                    covered += len(self._decoder[i])
                    if covered >= size:
                        seq = seq[:m + 1]
                        break
                found.add(tuple(seq))
        # a split the pattern would make before a final white space character
        if size > 1:
            for width in range(1, min(4, size - 1) + 1):
                try:
                    last = unstable[-width:].decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if len(last) == 1 and _WHITE_SPACE.match(last):
                    found.add(tuple(self._bpe_bytes(unstable[:-width])
                                    + self._bpe_bytes(unstable[-width:])))
                break
        return ids, [list(seq) for seq in sorted(found)]

    def decode_single_token_bytes(self, token):
        """The bytes of one id, special tokens included; KeyError (also a
        ValueError) for an id that is not in the vocabulary.

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_single_token_bytes(256)
        b'hi'
        """
        return self.decode_tokens_bytes([token])[0]

    def decode_tokens_bytes(self, tokens):
        """The bytes of each id, as a list (to show how a text was cut).

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_tokens_bytes([256, 33])
        [b'hi', b'!']
        """
        ids = _as_list(tokens, "tokens must be a sequence of int")
        if set(map(type, ids)) - {int}:
            ids = self._checked_ids(ids)
        try:
            return list(map(self._decoder.__getitem__, ids))
        except KeyError:
            self._checked_ids(ids)
            raise  # pragma: no cover

    def decode_with_offsets(self, tokens):
        """The text of `tokens` and, for each, the index of the character
        where it starts (of the character it starts inside, when a token
        begins within a multi-byte character); UnicodeDecodeError if the
        bytes are not UTF-8 (as tiktoken).

        >>> tok = Tokenizer.from_merges([(b"h", b"i")])
        >>> tok.decode_with_offsets([256, 32] + list("é".encode()))
        ('hi é', [0, 2, 3, 3])
        """
        parts = self.decode_tokens_bytes(tokens)
        text = b"".join(parts).decode("utf-8")
        # each token adds the characters that start in it (bytes that are not
        # 10xxxxxx); one that starts inside a character belongs to that one
        starts = _itertools.accumulate(map(len, map(_DROP_CONTINUATION, parts)), initial=0)
        offsets = [n - (p[0] & 0xC0 == 0x80) for n, p in zip(starts, parts)]
        return text, offsets

    def decode_batch(self, batch, *, errors="replace", num_threads=None):
        """``[decode(ids, errors) for ids in batch]``.  `num_threads` is
        accepted as tiktoken does; decoding is a copy of bytes, done in order.

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_batch([[256], [33, 256]])
        ['hi', '!hi']
        """
        return [b.decode("utf-8", errors)
                for b in self.decode_bytes_batch(batch, num_threads=num_threads)]

    def decode_bytes_batch(self, batch, *, num_threads=None):
        """``[decode_bytes(ids) for ids in batch]`` (see decode_batch).

        >>> Tokenizer.from_merges([(b"h", b"i")]).decode_bytes_batch([[256], [33]])
        [b'hi', b'!']
        """
        _thread_count(num_threads)
        batch = _as_list(batch, "batch must be a sequence of sequences of int")
        return list(map(self.decode_bytes, batch))

    def token_byte_values(self):
        """The bytes of every token but the special ones, sorted.

        >>> Tokenizer.from_merges([(b"h", b"i")]).token_byte_values()[104:107]
        [b'h', b'hi', b'i']
        """
        return list(self._sorted_tokens()[0])

    @classmethod
    def get_encoding(cls, name, path=None):
        """The same as the module's ``get_encoding``, for this class."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if name not in _ENCODINGS:
            return _plugin_encoding(cls, name, path)
        pin = _ENCODINGS[name][2][1]

        def build(pattern, specials, ranks, source=None):
            tok = cls._from_ranks(pattern, ranks, "ranks", specials)
            tok._name, tok._registered = name, (name, pin, None)
            tok._from_ranks_exactly = True
            return tok

        if path is None:  # tiktoken's cache or a download, under the registry's lock: once
            return _registered(cls, name, lambda: build(*_registry_ranks(name, None)))
        read = _registry_ranks(name, path)
        # the file is OpenAI's (checked): the registry's model too
        tok = cls._sharing(_registered(cls, name, lambda: build(*read)))
        tok._registered = (name, pin, _os.path.abspath(read[3]))
        return tok

    @classmethod
    def encoding_for_model(cls, model_name):
        """The same as the module's ``encoding_for_model``, for this class."""
        return cls.get_encoding(encoding_name_for_model(model_name))

    # ---- pickling: by name as tiktoken's, compactly otherwise --------------

    def __reduce__(self):
        """A registered encoding (from ``get_encoding``) pickles as its name, the
        sha256 of its ranks file and the path it was read from; any other
        tokenizer as its compact state and that state's sha256.  Unpickling a
        model this process has built shares it: the same tables and core."""
        registered = self.__dict__.get("_registered")
        if registered is not None:
            return (_unpickle_registered, (type(self), *registered, self._name))
        key, blob = _compact_state(self)
        with _BUILT_LOCK:
            _built().setdefault((type(self).core_class, key), self)
        return (_unpickle_model, (type(self), key, blob, self._name))


_OPENAI_BLOB = "https://openaipublic.blob.core.windows.net/"
_EOT, _FIM = "<|endoftext|>", ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")
_R50K = ("encodings/r50k_base.tiktoken",
         "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930")
_P50K = ("encodings/p50k_base.tiktoken",
         "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069")
_O200K = ("encodings/o200k_base.tiktoken",
          "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")
# name -> (pattern, special tokens, (ranks file under _OPENAI_BLOB, its sha256)).
# GPT-2's pattern here is PATTERNS["gpt2"]; tiktoken writes the same splits as
# '...| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s'.
_ENCODINGS = {
    "gpt2": ("gpt2", {_EOT: 50256}, _R50K),
    "r50k_base": ("gpt2", {_EOT: 50256}, _R50K),
    "p50k_base": ("gpt2", {_EOT: 50256}, _P50K),
    "p50k_edit": ("gpt2", {_EOT: 50256, **dict(zip(_FIM, range(50281, 50284)))}, _P50K),
    "cl100k_base": ("cl100k", {_EOT: 100257, **dict(zip(_FIM, range(100258, 100261))),
                               "<|endofprompt|>": 100276},
                    ("encodings/cl100k_base.tiktoken",
                     "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7")),
    "o200k_base": ("o200k", {_EOT: 199999, "<|endofprompt|>": 200018}, _O200K),
    # GPT-OSS: o200k_base's ranks; 200018 has two names, the first decodes it (as in tiktoken)
    "o200k_harmony": ("o200k", {
        _EOT: 199999, "<|endofprompt|>": 200018, "<|startoftext|>": 199998,
        **{f"<|{n}|>": 200000 + k for k, n in enumerate(
            "reserved_200000 reserved_200001 return constrain reserved_200004 channel start end "
            "message reserved_200009 reserved_200010 reserved_200011 call".split())},
        **{f"<|reserved_{i}|>": i for i in range(200013, 201088)}}, _O200K),
}
# OpenAI's .tiktoken files, known by their sha256 (what from_file reads without a
# sidecar): sha256 -> the first encoding that reads it (r50k's file: "gpt2")
_KNOWN_RANKS = {sha: name for name, (_, _, (_, sha)) in reversed(list(_ENCODINGS.items()))}
# tiktoken's "gpt2" reads GPT-2's own pair of files; each holds the same ranks as r50k_base
_GPT2_FILES = (("gpt-2/encodings/main/encoder.json",
                "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"),)


def _tiktoken_cache_dir():
    """Where tiktoken caches the files it downloads ('' when caching is off)."""
    import tempfile

    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in _os.environ:
            return _os.environ[var]
    return _os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cache_key(url):
    """The name of `url`'s file in tiktoken's cache: the sha1 of the URL."""
    import hashlib

    return hashlib.sha1(url.encode()).hexdigest()


def _ranks_sha256(ranks):
    """sha256 of the ranks written as OpenAI writes its .tiktoken files."""
    import base64
    import hashlib

    h = hashlib.sha256()
    for t, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        h.update(base64.b64encode(t) + b" %d\n" % r)
    return h.hexdigest()


def _read_ranks(path, where):
    """(ranks, sha256 of the file's text) of a .tiktoken file, plain or
    gzipped (its text: Tokenizer._from_ranks reads it), or of GPT-2's
    vocab.json / encoder.json (a dict, ids without the special token); read as
    every loader reads (_read_file: a regular file, at most _MAX_FILE_BYTES,
    inflated a step at a time)."""
    return _ranks_of(_read_file(path), where)


def _ranks_of(data, where):
    """_read_ranks of a file's bytes (inflated the same way if gzipped)."""
    import hashlib

    if data[:2] == b"\x1f\x8b":
        data = _inflate(data, where)
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not UTF-8 text (byte {e.start})") from None
    if text.lstrip().startswith("{"):
        raw = _json(text, where)
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: expected a JSON object of token -> id")
        ranks = {}
        for token, i in raw.items():
            if token == _EOT:
                continue
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
                raise ValueError(f"{where}: the id of {_short(token)} is not an int in [0, 2**31)")
            ranks[str_to_token(token)] = i
        return ranks, digest
    return text, digest


def _unknown_encoding(name, known):
    """get_encoding's ValueError for a name no encoding has: tiktoken's first
    two lines, then the names it could have been."""
    import pkgutil

    plugins = ["tiktoken_ext.openai_public"] + [
        m.name for m in pkgutil.iter_modules(list(_tiktoken_ext_folders()), "tiktoken_ext.")
        if m.name != "tiktoken_ext.openai_public"]
    return ValueError(f"Unknown encoding {name}.\nPlugins found: {plugins}\n"
                      f"Known encodings: {', '.join(known)}")


def _registry_ranks(name, path):
    """(pattern, specials, ranks, source) of one of tiktoken's encodings: the
    ranks (as _read_ranks gives them) read from `path` (source: the file
    read), else from tiktoken's cache, else downloaded from tiktoken's URL
    into that cache (source: None); always checked against the sha256 of
    OpenAI's file."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if name not in _ENCODINGS:
        raise _unknown_encoding(name, _ENCODINGS)
    pattern, specials, (file, sha256) = _ENCODINGS[name]
    pattern = PATTERNS[pattern]
    url = _OPENAI_BLOB + file
    basename = file.rsplit("/", 1)[1]
    gpt2 = name in ("gpt2", "r50k_base")
    sources = [(file, sha256)] + (list(_GPT2_FILES) if gpt2 else [])
    if path is not None:
        path = _os.fspath(path)
        if _os.path.isdir(path):
            names = [basename, basename + ".gz"] + (["vocab.json", "encoder.json"] if gpt2 else [])
            names += [_cache_key(_OPENAI_BLOB + f) for f, _ in sources]
            found = [_os.path.join(path, n) for n in names
                     if _os.path.isfile(_os.path.join(path, n))]
            if not found:
                raise FileNotFoundError(f"{path}: holds no {basename} (nor {basename}.gz) for "
                                        f"encoding {name!r}")
            path = found[0]
        if not _os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file (the ranks of encoding {name!r})")
        if not _os.path.isfile(path):
            raise ValueError(f"{path}: not a regular file")
        ranks, digest = _read_ranks(path, path)
        if digest != sha256 and all(digest != h for _, h in sources) and _ranks_sha256(
                ranks if isinstance(ranks, dict) else _tiktoken_parse(ranks, path)) != sha256:
            raise ValueError(f"{path}: these are not the ranks of {name!r} (OpenAI's {basename} "
                             f"has sha256 {sha256})")
        return pattern, dict(specials), ranks, path
    cache = _tiktoken_cache_dir()
    mismatched = None
    if cache:
        for f, h in sources:
            cached = _os.path.join(cache, _cache_key(_OPENAI_BLOB + f))
            if _os.path.isfile(cached):
                try:
                    ranks, digest = _read_ranks(cached, cached)
                except ValueError:  # not even a ranks file: fetched again, as a wrong one
                    digest = None
                if digest == h:
                    return pattern, dict(specials), ranks, None
                mismatched = mismatched or cached
    target = _os.path.join(cache, _cache_key(url)) if cache else None
    if _os.environ.get("BPE_OFFLINE", "").strip().lower() not in ("", "0", "false", "no"):
        if mismatched:
            where = f"tiktoken's cache file {mismatched} does not match OpenAI's file (sha256)"
        else:
            where = (f"tiktoken's cache has no {target}" if cache else
                     "tiktoken's cache is off (TIKTOKEN_CACHE_DIR is empty)")
        there = f" as {target}" if cache else ""
        raise FileNotFoundError(
            f"the ranks of encoding {name!r} are not here, and BPE_OFFLINE is set (no "
            f"download): {where}. Download {url} (sha256 {sha256}) and save it{there}, or pass "
            f"its path (plain or .gz): get_encoding({name!r}, path=...)")
    base = _os.environ.get("BPE_ENCODINGS_URL") or _OPENAI_BLOB
    data = _download(base.rstrip("/") + "/" + file, sha256, name)
    if target is not None:
        chosen = "TIKTOKEN_CACHE_DIR" in _os.environ or "DATA_GYM_CACHE_DIR" in _os.environ
        _cache_write(cache, target, data, chosen)
    return pattern, dict(specials), _ranks_of(data, url)[0], None


_DOWNLOAD_TIMEOUT = 60.0  # seconds the server may send nothing (BPE_DOWNLOAD_TIMEOUT)


def _download(url, sha256, name):
    """The bytes at `url`, whose sha256 must be `sha256`: ValueError for other
    bytes, OSError (TimeoutError, ConnectionError) when the transfer fails."""
    import hashlib
    import http.client
    import socket
    import urllib.error
    import urllib.request

    try:
        timeout = float(_os.environ.get("BPE_DOWNLOAD_TIMEOUT") or _DOWNLOAD_TIMEOUT)
    except ValueError:
        raise ValueError(f"BPE_DOWNLOAD_TIMEOUT must be a number of seconds, not "
                         f"{_os.environ['BPE_DOWNLOAD_TIMEOUT']!r}") from None
    hint = (f"; or download it yourself and pass its path: get_encoding({name!r}, path=...)"
            if name else "")
    chunks, size = [], 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            while True:
                chunk = response.read(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > _MAX_FILE_BYTES:
                    raise ValueError(f"{url}: more than {_MAX_FILE_BYTES} bytes, not a ranks file")
                chunks.append(chunk)
    except (socket.timeout, TimeoutError):
        raise TimeoutError(f"downloading {url}: timed out (nothing for {timeout:g} s; "
                           f"BPE_DOWNLOAD_TIMEOUT sets the seconds){hint}") from None
    except urllib.error.HTTPError as e:
        raise ConnectionError(f"downloading {url}: HTTP {e.code} {e.reason}{hint}") from None
    except urllib.error.URLError as e:
        raise ConnectionError(f"downloading {url}: {e.reason}{hint}") from None
    except (OSError, http.client.HTTPException) as e:
        raise ConnectionError(f"downloading {url}: {type(e).__name__}: {e}{hint}") from None
    if length is not None and length.isdigit() and size != int(length):
        raise ConnectionError(f"downloading {url}: the connection closed after {size} of "
                              f"{length} bytes{hint}")
    data = b"".join(chunks)
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ValueError(f"downloaded {url}: its sha256 is {digest}, not {sha256} (a corrupted "
                         f"or altered file; nothing was cached){hint}")
    return data


def _cache_write(cache, target, data, chosen):
    """Put `data` in tiktoken's cache as `target`, atomically (a temporary
    file beside it, then a rename), as tiktoken does; where the user did not
    choose the directory, one that cannot be written is no error."""
    import uuid

    try:
        _os.makedirs(cache, exist_ok=True)
        tmp = f"{target}.{uuid.uuid4().hex}.tmp"
        try:
            with open(tmp, "xb") as f:
                f.write(data)
            _os.replace(tmp, target)
        except BaseException:
            _unlink_quietly(tmp)
            raise
    except OSError:
        if chosen:
            raise


def get_encoding(name, path=None):
    """One of tiktoken's encodings as a Tokenizer: ``"gpt2"`` / ``"r50k_base"``,
    ``"p50k_base"``, ``"p50k_edit"``, ``"cl100k_base"``, ``"o200k_base"``,
    ``"o200k_harmony"`` (GPT-OSS), with tiktoken's pattern, special tokens and
    ids, or one that a tiktoken plugin defines (see list_encoding_names; built
    as tiktoken builds it, no `path`).  The ranks come from `path` (the
    .tiktoken file, plain or gzipped; for the GPT-2 encodings also GPT-2's
    vocab.json; or a directory holding one of these), or else from tiktoken's
    cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or the system's
    temporary directory ``/data-gym-cache``; shared with tiktoken), or else they
    are downloaded from tiktoken's URL into that cache; either way they must be
    OpenAI's (sha256 checked).  ``BPE_OFFLINE=1``: never a download, a
    FileNotFoundError saying where to put the file.  Without `path`, a process
    builds each encoding once and returns that instance (as tiktoken does).

    >>> get_encoding("o200k")
    Traceback (most recent call last):
    ...
    ValueError: Unknown encoding o200k.
    Plugins found: ['tiktoken_ext.openai_public']
    Known encodings: gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base, ...
    >>> get_encoding("cl100k_base", path="no/such/cl100k_base.tiktoken")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no/such/cl100k_base.tiktoken: no such file (the ranks of encoding ...)
    """
    return Tokenizer.get_encoding(name, path)


# tiktoken's table of OpenAI's models (tiktoken/model.py, 0.14): names, then prefixes
_MODEL_TO_ENCODING = {
    "o1": "o200k_base", "o3": "o200k_base", "o4-mini": "o200k_base", "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base", "gpt-4o": "o200k_base", "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base", "gpt-3.5": "cl100k_base", "gpt-35-turbo": "cl100k_base",
    "davinci-002": "cl100k_base", "babbage-002": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base", "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    "text-davinci-003": "p50k_base", "text-davinci-002": "p50k_base",
    "text-davinci-001": "r50k_base", "text-curie-001": "r50k_base", "text-babbage-001": "r50k_base",
    "text-ada-001": "r50k_base", "davinci": "r50k_base", "curie": "r50k_base",
    "babbage": "r50k_base", "ada": "r50k_base",
    "code-davinci-002": "p50k_base", "code-davinci-001": "p50k_base",
    "code-cushman-002": "p50k_base", "code-cushman-001": "p50k_base",
    "davinci-codex": "p50k_base", "cushman-codex": "p50k_base",
    "text-davinci-edit-001": "p50k_edit", "code-davinci-edit-001": "p50k_edit",
    "text-similarity-davinci-001": "r50k_base", "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base", "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base", "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base", "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base", "code-search-ada-code-001": "r50k_base",
    "gpt2": "gpt2", "gpt-2": "gpt2",
}
_MODEL_PREFIX_TO_ENCODING = {
    "o1-": "o200k_base", "o3-": "o200k_base", "o4-mini-": "o200k_base", "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base", "gpt-4.1-": "o200k_base", "chatgpt-4o-": "o200k_base",
    "gpt-4o-": "o200k_base", "gpt-4-": "cl100k_base", "gpt-3.5-turbo-": "cl100k_base",
    "gpt-35-turbo-": "cl100k_base", "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base", "ft:gpt-4": "cl100k_base", "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base", "ft:babbage-002": "cl100k_base",
}


def encoding_name_for_model(model_name):
    """The name of the encoding an OpenAI model uses, from tiktoken's table;
    KeyError for a model it does not know.

    >>> encoding_name_for_model("gpt-4o-2024-08-06"), encoding_name_for_model("gpt-4")
    ('o200k_base', 'cl100k_base')
    """
    if model_name in _MODEL_TO_ENCODING:
        return _MODEL_TO_ENCODING[model_name]
    for prefix, name in _MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(f"Could not automatically map {model_name} to a tokeniser. Please use "
                   f"`tiktoken.get_encoding` to explicitly get the tokeniser you expect.")


def encoding_for_model(model_name):
    """``get_encoding(encoding_name_for_model(model_name))``, as tiktoken's."""
    return Tokenizer.encoding_for_model(model_name)


def list_encoding_names():
    """The names ``get_encoding`` knows: tiktoken's encodings and those of
    tiktoken's plugins (modules of the ``tiktoken_ext`` namespace package
    that define ``ENCODING_CONSTRUCTORS``), in tiktoken's order.

    >>> list_encoding_names()[:7]
    ['gpt2', 'r50k_base', 'p50k_base', 'p50k_edit', 'cl100k_base', 'o200k_base', 'o200k_harmony']
    """
    return list(_plugins()[0])


# One built model per process.  get_encoding(name) gives one instance per
# class and name, as tiktoken's registry does (programs call it per request).
# Unpickling a model this process has built (pickled here, or unpickled
# before) shares its tables and core: _built() maps (class, the sha256 of the
# model's compact state) to a tokenizer holding it, weakly, and _RECENT keeps
# the last models unpickled alive (a Pool worker drops its task's tokenizer
# before the next task arrives).

_REGISTRY = {}
_REGISTRY_LOCK = _threading.RLock()
_BUILT = []  # [the WeakValueDictionary], made on first use
_RECENT = _collections.deque(maxlen=2)
_BUILT_LOCK = _threading.Lock()


def _new_locks():
    """A forked child's own locks: another thread may have held these (building
    an encoding) when the process forked."""
    global _REGISTRY_LOCK, _BUILT_LOCK
    _REGISTRY_LOCK, _BUILT_LOCK = _threading.RLock(), _threading.Lock()


def _finish_imports():
    """Before fork(): wait for the imports other threads are in the middle of
    (this library imports its heavy modules where they are used, so a thread
    building a tokenizer may be importing one).  A child forked mid-import
    would find the module half made and its import lock held forever.  The
    module locks are importlib's own (taking and releasing each one waits for
    its import, as a second importer of the module would); where importlib
    has none of these names, nothing is waited for."""
    try:
        from importlib import _bootstrap

        names = list(_bootstrap._module_locks)
        wait = _bootstrap._lock_unlock_module
    except (ImportError, AttributeError):  # pragma: no cover - another importlib
        return
    for name in names:
        try:
            wait(name)
        except Exception:  # noqa: BLE001 - the importing thread reports its own error
            pass


if hasattr(_os, "register_at_fork"):  # POSIX
    _os.register_at_fork(before=_finish_imports, after_in_child=_new_locks)


def _built():
    if not _BUILT:
        import weakref

        _BUILT.append(weakref.WeakValueDictionary())
    return _BUILT[0]


def _registered(cls, name, build):
    """The registry's instance of `cls` for encoding `name` (get_encoding
    hands out one per class and name): it shares the model of every class
    with the same core (Tokenizer, and tiktoken.core.Encoding while patched),
    which `build()` makes the first time."""
    with _REGISTRY_LOCK:
        tok = _REGISTRY.get((cls, name))
        if tok is None:
            model = _REGISTRY.get((cls.core_class, name))
            if model is None:
                model = _REGISTRY[(cls.core_class, name)] = build()
            tok = _REGISTRY[(cls, name)] = cls._sharing(model)
        return tok


_STATE_VERSION = 1


def _compact_state(tok):
    """(key, blob): the model without the tokens that merges make, ids as
    little-endian int32 columns, zlib-compressed; key: its sha256.  Made once
    per model."""
    state = tok.__dict__.get("_state")
    if state is None:
        import hashlib
        import json
        import zlib

        made = set(tok._rank_id)
        base = sorted((i, t) for i, t in tok._tokens.items() if i not in made)
        columns = [_array.array("i", c) for c in (
            [i for i, _ in base], [len(t) for _, t in base], [a for a, _ in tok._rank_pair],
            [b for _, b in tok._rank_pair], tok._rank_id)]
        if _sys.byteorder == "big":
            for c in columns:
                c.byteswap()
        head = json.dumps([_STATE_VERSION, tok._pattern, _specials_by_id(tok._specials),
                           len(base), len(tok._rank_id)]).encode()
        payload = b"".join([len(head).to_bytes(4, "little"), head,
                            *(c.tobytes() for c in columns), *(t for _, t in base)])
        state = tok._state = (hashlib.sha256(payload).hexdigest(), zlib.compress(payload, 1))
    return state


def _specials_by_id(specials):
    """The special tokens as [name, id] pairs by id; names sharing an id keep
    their order (the first decodes it)."""
    return sorted(specials.items(), key=_operator.itemgetter(1))


def _from_state(cls, blob):
    import json
    import zlib

    payload = zlib.decompress(blob)
    pos = 4 + int.from_bytes(payload[:4], "little")
    version, pattern, specials, n_base, n_merges = json.loads(payload[4:pos])
    if version != _STATE_VERSION:
        raise ValueError(f"a tokenizer pickled by another version of this library (state "
                         f"{version}; this one reads {_STATE_VERSION})")
    columns = []
    for n in (n_base, n_base, n_merges, n_merges, n_merges):
        column = _array.array("i", payload[pos:pos + 4 * n])
        if _sys.byteorder == "big":
            column.byteswap()
        columns.append(column)
        pos += 4 * n
    ids, lengths, lefts, rights, made = columns
    tokens = {}
    for i, n in zip(ids, lengths):
        tokens[i] = payload[pos:pos + n]
        pos += n
    merges = []
    for a, b, m in zip(lefts, rights, made):
        merges.append((tokens[a], tokens[b]))
        tokens[m] = tokens[a] + tokens[b]
    return cls._create(pattern, tokens, merges, dict(specials))


def _unpickle_model(cls, key, blob, name):
    with _BUILT_LOCK:
        tok = _built().get((cls.core_class, key))
    if tok is None:
        tok = _from_state(cls, blob)
        tok._state = (key, blob)
        with _BUILT_LOCK:
            tok = _built().setdefault((cls.core_class, key), tok)
    with _BUILT_LOCK:
        if not any(t is tok for t in _RECENT):
            _RECENT.append(tok)
    new = cls._sharing(tok)
    if name != cls._name:
        new._name = name
    else:   # (tok, the first of this model pickled here, may have had another)
        new.__dict__.pop("_name", None)
    return new


def _forget_built(tok):
    """Take tok out of the models unpickling shares (its model is to change)."""
    with _BUILT_LOCK:
        built = _built()
        for key in [k for k, t in built.items() if t is tok]:
            del built[key]


def _unpickle_registered(cls, name, sha256, source, label):
    known = _ENCODINGS.get(name)
    if known is None or known[2][1] != sha256:
        here = f"its file has sha256 {known[2][1]}" if known else "there is no such encoding"
        raise ValueError(f"a pickled encoding {name!r} read from a file with sha256 {sha256}; "
                         f"here {here}")
    with _REGISTRY_LOCK:
        tok = _REGISTRY.get((cls, name))
    if tok is None and source is not None and _os.path.isfile(source):
        try:  # the file it was read from, where it still is
            tok = cls.get_encoding(name, path=source)
        except (OSError, ValueError):
            tok = None
    if tok is None:
        tok = cls.get_encoding(name)  # tiktoken's cache, or a download
    new = type(tok)._sharing(tok)
    new._name, new._registered = label, (name, sha256, source)
    return new


# tiktoken's plugins: the modules of the `tiktoken_ext` namespace package
# (other than openai_public, whose encodings are _ENCODINGS) each define
# ENCODING_CONSTRUCTORS, name -> a function returning Encoding's arguments.
# Found where tiktoken finds them, once per set of the namespace's folders.

_PLUGINS = {}  # the namespace's folders (a tuple) -> (names in tiktoken's order, constructors)


def _tiktoken_ext_folders():
    import importlib.machinery

    try:  # the folders on sys.path, whatever sys.modules holds (patch_tiktoken's module)
        spec = importlib.machinery.PathFinder.find_spec("tiktoken_ext")
    except (ImportError, ValueError):
        spec = None
    return tuple(spec.submodule_search_locations or ()) if spec is not None else ()


def _plugins():
    """(every encoding name in tiktoken's order, {plugin name: constructor})."""
    import importlib
    import pkgutil

    folders = _tiktoken_ext_folders()
    with _REGISTRY_LOCK:
        found = _PLUGINS.get(folders)
        if found is not None:
            return found
        ext = _sys.modules.get("tiktoken_ext")
        if ext is not None and getattr(ext, "_bpe_patch", False):
            ext.__path__[:] = folders  # sys.path may have grown since patch_tiktoken()
        names, constructors = [], {}
        modules = [m.name for m in pkgutil.iter_modules(list(folders), "tiktoken_ext.")]
        if "tiktoken_ext.openai_public" not in modules:
            names += _ENCODINGS
        for module_name in modules:
            if module_name == "tiktoken_ext.openai_public":
                names += _ENCODINGS
                continue
            made = getattr(importlib.import_module(module_name), "ENCODING_CONSTRUCTORS", None)
            if not isinstance(made, _abc.Mapping):
                raise ValueError(f"tiktoken plugin {module_name} does not define "
                                 f"ENCODING_CONSTRUCTORS")
            for name, constructor in made.items():
                if name in _ENCODINGS or name in constructors:
                    raise ValueError(f"Duplicate encoding name {name} in tiktoken plugin "
                                     f"{module_name}")
                names.append(name)
                constructors[name] = constructor
        found = _PLUGINS[folders] = (names, constructors)
        return found


def _plugin_encoding(cls, name, path):
    """get_encoding of an encoding a tiktoken plugin defines: built as
    tiktoken builds it, ``Encoding(**constructor())``, once per process."""
    constructor = _plugins()[1].get(name)
    if constructor is None:
        raise _unknown_encoding(name, list_encoding_names())
    if path is not None:
        raise ValueError(f"encoding {name!r} comes from a tiktoken plugin, which reads its own "
                         f"files: get_encoding({name!r}) takes no path")
    return _registered(cls, name, lambda: cls(**constructor()))


# tiktoken.load's functions (plugins call them), with tiktoken's cache rules:
# the same directory and keys as get_encoding's

def _tiktoken_read_file(blobpath):
    """tiktoken.load.read_file: the bytes of a local file or of a URL (http,
    https; other schemes through blobfile, as tiktoken)."""
    if not isinstance(blobpath, str):
        blobpath = _os.fspath(blobpath)
    if "://" not in blobpath:
        return _raw_bytes(blobpath)
    if blobpath.startswith(("http://", "https://")):
        if _offline():
            raise FileNotFoundError(f"{blobpath}: not downloaded, BPE_OFFLINE is set; put the file "
                                    f"in tiktoken's cache or read it from a local path")
        return _download(blobpath, None, None)
    try:
        import blobfile
    except ImportError:
        raise ImportError(f"reading {blobpath} needs blobfile: pip install blobfile") from None
    return blobfile.read_bytes(blobpath)


def _raw_bytes(path):
    """A regular file's bytes as they are (not inflated: hashes are of these)."""
    _check_regular(path, *_mode_size(_os.stat(path)))
    with open(path, "rb") as f:
        return f.read(_MAX_FILE_BYTES + 1)[:_MAX_FILE_BYTES + 1]


def _tiktoken_check_hash(data, expected_hash):
    import hashlib

    return hashlib.sha256(data).hexdigest() == expected_hash


def _tiktoken_read_file_cached(blobpath, expected_hash=None):
    """tiktoken.load.read_file_cached: read_file through tiktoken's cache (a
    cached file whose sha256 is not `expected_hash` is fetched again; a
    download is checked, then cached atomically)."""

    cache = _tiktoken_cache_dir()
    if not cache:
        data = _tiktoken_read_file(blobpath)
    else:
        target = _os.path.join(cache, _cache_key(blobpath))
        if _os.path.exists(target):
            data = _raw_bytes(target)
            if expected_hash is None or _tiktoken_check_hash(data, expected_hash):
                return data
            _unlink_quietly(target)
        data = _tiktoken_read_file(blobpath)
    if expected_hash and not _tiktoken_check_hash(data, expected_hash):
        raise ValueError(f"Hash mismatch for data downloaded from {blobpath} (expected "
                         f"{expected_hash}): a corrupted or altered file")
    if cache:
        chosen = "TIKTOKEN_CACHE_DIR" in _os.environ or "DATA_GYM_CACHE_DIR" in _os.environ
        _cache_write(cache, target, data, chosen)
    return data


def _tiktoken_load_tiktoken_bpe(tiktoken_bpe_file, expected_hash=None):
    """tiktoken.load.load_tiktoken_bpe: a .tiktoken file's ranks, bytes -> int."""
    data = _tiktoken_read_file_cached(tiktoken_bpe_file, expected_hash)
    if data[:2] == b"\x1f\x8b":
        data = _inflate(data, tiktoken_bpe_file)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise ValueError(f"{tiktoken_bpe_file}: not a .tiktoken file (byte {e.start})") from None
    return _tiktoken_parse(text, tiktoken_bpe_file)


def _tiktoken_data_gym_to_mergeable_bpe_ranks(vocab_bpe_file, encoder_json_file,
                                              vocab_bpe_hash=None, encoder_json_hash=None,
                                              clobber_one_byte_tokens=False):
    """tiktoken.load.data_gym_to_mergeable_bpe_ranks: the ranks of GPT-2's
    vocab.bpe (merges) + encoder.json pair, which must agree (ValueError)."""
    merges = _tiktoken_read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode("utf-8")
    vocab = _tiktoken_read_file_cached(encoder_json_file, encoder_json_hash).decode("utf-8")
    tokens, _, _ = _gpt2_parse(vocab, merges, None, encoder_json_file, vocab_bpe_file)
    ranks = {t: i for i, t in tokens.items()}
    for special in (b"<|endoftext|>", b"<|startoftext|>"):
        ranks.pop(special, None)
    # tiktoken's check: the ids are the ranks of the merges, after the single bytes in
    # GPT-2's order (printable ones first) or, with clobber_one_byte_tokens, encoder.json's
    singles = sorted(range(256), key=lambda b: (not (chr(b).isprintable() and b != 32), b))
    expected = {bytes([b]): r for r, b in enumerate(singles)}
    if clobber_one_byte_tokens:
        expected.update((t, i) for t, i in ranks.items() if len(t) == 1)
    expected.update((a + b, 256 + k) for k, (a, b) in enumerate(_gpt2_merges(merges)))
    if expected != ranks:
        raise ValueError(f"{encoder_json_file}: its ids are not the ranks of the merges of "
                         f"{vocab_bpe_file}")
    return ranks


def _gpt2_merges(text):
    return [tuple(map(str_to_token, line.split())) for line in text.split("\n")[1:-1]]


def _tiktoken_dump_tiktoken_bpe(bpe_ranks, tiktoken_bpe_file):
    """tiktoken.load.dump_tiktoken_bpe: write ranks as a .tiktoken file."""
    import base64

    text = "".join(f"{base64.b64encode(t).decode()} {r}\n"
                   for t, r in sorted(bpe_ranks.items(), key=lambda kv: kv[1]))
    _atomic_write(tiktoken_bpe_file, text)


def _offline():
    return _os.environ.get("BPE_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


# patch_tiktoken(): modules that stand for tiktoken's, made from this module's
# API (nothing here is a second copy of it), put in sys.modules.

_TIKTOKEN_MODULES = ("tiktoken", "tiktoken.core", "tiktoken.model", "tiktoken.registry",
                     "tiktoken.load", "tiktoken_ext", "tiktoken_ext.openai_public")
_PATCH = {}            # while patched: "class" (the Tokenizer class), "saved" (sys.modules')
_ENCODING_CLASSES = {}  # Tokenizer class -> its tiktoken.core.Encoding
_PATCHED_ONCE = []      # [True] once this process (or its parent before a fork) has patched


def _encoding_class(base):
    """The class tiktoken.core.Encoding is while patched: `base` (a Tokenizer
    class) under tiktoken's name, which is where a patched process finds it.
    It pickles as tiktoken's Encoding does (see _reduce_patched) and reads
    tiktoken's pickles (_setstate_patched).  Sent to a worker process by
    multiprocessing, it pickles as `base` does and brings the patch: a
    process that unpickles one and has never patched is patched (a spawned
    worker imports tiktoken the way its parent does)."""
    with _REGISTRY_LOCK:
        cls = _ENCODING_CLASSES.get(base)
        if cls is None:
            from multiprocessing.reduction import ForkingPickler

            cls = _ENCODING_CLASSES[base] = type(base)("Encoding", (base,), {
                "__module__": "tiktoken.core", "__qualname__": "Encoding",
                "__doc__": f"tiktoken.core.Encoding while {base.__module__}.patch_tiktoken() is "
                           f"in effect: {base.__module__}.Tokenizer under tiktoken's name.",
                "__reduce__": _reduce_patched, "__setstate__": _setstate_patched,
                "__copy__": _copy_patched, "__deepcopy__": _copy_patched})
            ForkingPickler.register(cls, _reduce_bringing_the_patch)
        return cls


def _patched_classes(cls):
    """(the tiktoken.core.Encoding class among cls's bases, its Tokenizer class)."""
    encoding = next(c for c in cls.__mro__ if c.__dict__.get("__reduce__") is _reduce_patched)
    return encoding, encoding.__bases__[0]


def _reduce_patched(self):
    """An instance of tiktoken.core.Encoding pickles as tiktoken's does, so that
    a process with tiktoken alone reads it: tiktoken.core.Encoding and
    tiktoken's state, the name of an encoding of the registry (from
    get_encoding), else the constructor's arguments.  That is while the patch
    is in effect and the model was made from tiktoken's ranks (tiktoken's
    constructor or get_encoding: ids that are ranks, which tiktoken rebuilds
    exactly).  Any other (a program's subclass, a model from another
    constructor, after unpatch_tiktoken) pickles as its Tokenizer class does."""
    cls = type(self)
    encoding, base = _patched_classes(cls)
    if (cls is encoding and self._from_ranks_exactly
            and getattr(_sys.modules.get("tiktoken.core"), "Encoding", None) is cls):
        import copyreg

        registered = self.__dict__.get("_registered")
        with _REGISTRY_LOCK:
            by_name = _REGISTRY.get((cls, self.name)) is self
        if by_name or (registered is not None and registered[0] == self.name):
            return (copyreg.__newobj__, (cls,), self.name)
        return (copyreg.__newobj__, (cls,), {
            "name": self.name, "pat_str": self._pat_str, "mergeable_ranks": self._mergeable_ranks,
            "special_tokens": self._special_tokens})
    return _reduce_bringing_the_patch(self)


def _reduce_bringing_the_patch(self):
    """An instance of tiktoken.core.Encoding pickled as its Tokenizer class's
    are, and one of a subclass of it (a program's) as that subclass; the
    process that unpickles it is patched, if it never was."""
    cls = type(self)
    encoding, base = _patched_classes(cls)
    function, args = base.__reduce__(self)
    return (_unpickle_patched, (base, function, args[1:], None if cls is encoding else cls,
                                self._from_ranks_exactly))


def _unpickle_patched(base, function, args, cls=None, from_ranks_exactly=None):
    with _REGISTRY_LOCK:
        if not _PATCHED_ONCE:
            _patch(base)
    tok = function(_encoding_class(base) if cls is None else cls, *args)
    if from_ranks_exactly:  # (the worker pickles it as tiktoken's, as its parent did)
        tok._from_ranks_exactly = True
    return tok


def _copy_patched(self, memo=None):
    """copy.copy and copy.deepcopy: a new instance sharing the model (not
    rebuilt from tiktoken's state)."""
    function, args = _reduce_bringing_the_patch(self)
    return function(*args)


def _setstate_patched(self, state):
    """Read tiktoken's pickle of an Encoding (what its __getstate__ gives): the
    name of a registered encoding, or the constructor's arguments (passed to
    __init__, as tiktoken does)."""
    if isinstance(state, str):
        encoding, _ = _patched_classes(type(self))
        enc = encoding.get_encoding(state)
        _forget_built(self)
        for key in self._own_state(self):
            del self.__dict__[key]
        self.__dict__.update({k: enc.__dict__[k] for k in self._own_state(enc)})
    elif isinstance(state, dict):
        self.__init__(**state)
    else:
        raise TypeError(f"a pickled tiktoken Encoding's state is an encoding's name or a dict "
                        f"of its constructor's arguments, not {type(state).__name__}")


class _RegistryEncodings(_abc.Mapping):
    """tiktoken.registry.ENCODINGS while patched: name -> the encoding
    get_encoding has made, of `cls` (tiktoken's Encoding.__getstate__ reads it
    to pickle a registered encoding by name)."""

    def __init__(self, cls):
        self._cls = cls

    def __getitem__(self, name):
        with _REGISTRY_LOCK:
            tok = _REGISTRY.get((self._cls, name))
        if tok is None:
            raise KeyError(name)
        return tok

    def __iter__(self):
        with _REGISTRY_LOCK:
            return iter([n for c, n in _REGISTRY if c is self._cls])

    def __len__(self):
        return len(list(iter(self)))


def _tiktoken_modules(base):
    import functools
    import importlib.machinery
    import types

    cls = _encoding_class(base)

    def module(name, doc, folders=None, **names):
        m = types.ModuleType(name, doc)
        m.__spec__ = importlib.machinery.ModuleSpec(name, None, origin=origin,
                                                    is_package=folders is not None)
        if folders is not None:
            m.__path__ = m.__spec__.submodule_search_locations = list(folders)
        m.__dict__.update(names, _bpe_patch=True)
        return m

    def constructor(name):
        enc = cls.get_encoding(name)
        made = {"name": name, "pat_str": enc._pat_str, "mergeable_ranks": enc._mergeable_ranks,
                "special_tokens": enc._special_tokens}
        if name in ("gpt2", "r50k_base", "p50k_base"):
            made["explicit_n_vocab"] = enc.n_vocab
        return made

    made = {name: functools.partial(constructor, name) for name in _ENCODINGS}
    origin = f"{base.__module__}.patch_tiktoken()"
    where = f"made by {origin}"
    try:  # tiktoken's other submodules (tiktoken._educational) from its files, if installed
        spec = importlib.machinery.PathFinder.find_spec("tiktoken")
    except (ImportError, ValueError):
        spec = None
    api = {"Encoding": cls, "get_encoding": cls.get_encoding,
           "list_encoding_names": list_encoding_names,
           "encoding_for_model": cls.encoding_for_model,
           "encoding_name_for_model": encoding_name_for_model}
    models = {"MODEL_TO_ENCODING": _MODEL_TO_ENCODING,
              "MODEL_PREFIX_TO_ENCODING": _MODEL_PREFIX_TO_ENCODING}
    load = {"read_file": _tiktoken_read_file, "read_file_cached": _tiktoken_read_file_cached,
            "check_hash": _tiktoken_check_hash, "load_tiktoken_bpe": _tiktoken_load_tiktoken_bpe,
            "data_gym_to_mergeable_bpe_ranks": _tiktoken_data_gym_to_mergeable_bpe_ranks,
            "dump_tiktoken_bpe": _tiktoken_dump_tiktoken_bpe}
    parts = {
        "core": module("tiktoken.core", f"tiktoken.core, {where}", Encoding=cls),
        "model": module("tiktoken.model", f"tiktoken.model, {where}", **models,
                        **{k: api[k] for k in ("encoding_for_model", "encoding_name_for_model")}),
        "registry": module("tiktoken.registry", f"tiktoken.registry, {where}",
                           ENCODINGS=_RegistryEncodings(cls),
                           **{k: api[k] for k in ("get_encoding", "list_encoding_names")}),
        "load": module("tiktoken.load", f"tiktoken.load, {where}", **load),
    }
    top = module("tiktoken", f"tiktoken's API, {where}",
                 folders=list(spec.submodule_search_locations or ()) if spec else [],
                 **api, **parts, __version__=_TIKTOKEN_API)
    public = module("tiktoken_ext.openai_public", f"tiktoken's encodings, {where}",
                    ENCODING_CONSTRUCTORS=made, **made)
    ext = module("tiktoken_ext", f"tiktoken's plugin namespace, {where}",
                 folders=_tiktoken_ext_folders(), openai_public=public)
    return {"tiktoken": top, **{f"tiktoken.{k}": v for k, v in parts.items()},
            "tiktoken_ext": ext, "tiktoken_ext.openai_public": public}


_TIKTOKEN_API = "0.14.0"  # the version of tiktoken whose API this module offers


def patch_tiktoken(tokenizer_class=None):
    """Run programs written for tiktoken on this library: after it,
    ``import tiktoken`` (and ``tiktoken.core``, ``tiktoken.model``,
    ``tiktoken.registry``, ``tiktoken.load``, ``tiktoken_ext.openai_public``)
    gives modules made from this library's API, whose ``Encoding`` is
    `tokenizer_class` (default: this module's Tokenizer; the compiled ``bpe``
    passes its own) under tiktoken's name.  Call it before importing the
    programs: a module that imported tiktoken already keeps what it got.
    ``unpatch_tiktoken()`` puts back what sys.modules held.  Calling it again
    is harmless.

    >>> patch_tiktoken()
    >>> import tiktoken
    >>> enc = tiktoken.Encoding("mine", pat_str=PATTERNS["gpt2"], special_tokens={},
    ...                         mergeable_ranks={bytes([b]): b for b in range(256)})
    >>> enc, isinstance(enc, Tokenizer), type(enc).__module__
    (<Encoding 'mine'>, True, 'tiktoken.core')
    >>> unpatch_tiktoken()
    """
    base = Tokenizer if tokenizer_class is None else tokenizer_class
    if not (isinstance(base, type) and issubclass(base, Tokenizer)):
        raise TypeError(f"tokenizer_class must be a Tokenizer class, not {base!r}")
    _patch(base)


def _patch(base):
    """patch_tiktoken with `base`, a Tokenizer class."""
    with _REGISTRY_LOCK:
        if _PATCH.get("class") is base:
            return
        unpatch_tiktoken()
        modules = _tiktoken_modules(base)
        _PATCH["saved"] = {name: _sys.modules.get(name) for name in _TIKTOKEN_MODULES}
        _PATCH["class"] = base
        _PATCHED_ONCE[:] = [True]
        _sys.modules.update(modules)


def unpatch_tiktoken():
    """Undo ``patch_tiktoken()``: sys.modules holds again what it held before
    (tiktoken's own modules, or nothing).  Harmless when not patched."""
    with _REGISTRY_LOCK:
        saved = _PATCH.pop("saved", None)
        _PATCH.pop("class", None)
        if saved is None:
            return
        for name, module in saved.items():
            if module is None:
                _sys.modules.pop(name, None)
            else:
                _sys.modules[name] = module


# --------------------------------------------------------------------------
# Durable files: reading a tokenizer file safely, writing atomically
# --------------------------------------------------------------------------


# Loaders read at most this many bytes: far above any real vocabulary (o200k's
# .tiktoken file is 3.6 MB, its tokenizer.json about 15 MB), far below what
# would exhaust memory when a path names something endless.
_MAX_FILE_BYTES = 1 << 28

_FILE_KINDS = ((_stat.S_ISDIR, "a directory"), (_stat.S_ISFIFO, "a FIFO (named pipe)"),
               (_stat.S_ISCHR, "a character device"), (_stat.S_ISBLK, "a block device"),
               (_stat.S_ISSOCK, "a socket"))


def _check_regular(path, mode, size):
    if not _stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise ValueError(f"{path}: {kind}; tokenizer files must be regular files")
    if size > _MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes, more than the {_MAX_FILE_BYTES} bytes a tokenizer "
                         f"file may have")


def _read_file(path):
    """The bytes of a regular file, inflated if it is gzipped: what every
    loader reads (the native format, tokenizer.json, GPT-2's files, .tiktoken
    files and their sidecars, tiktoken's cache).

    Devices, FIFOs, sockets and directories are refused before anything is
    read (a FIFO is opened without blocking, so a missing writer never hangs
    the caller), and so is a file larger than _MAX_FILE_BYTES, before or
    after inflating (which stops there: a gzip bomb costs no more)."""
    path = _os.fspath(path)
    _check_regular(path, *_mode_size(_os.stat(path)))
    flags = (_os.O_RDONLY | getattr(_os, "O_NONBLOCK", 0) | getattr(_os, "O_NOCTTY", 0)
             | getattr(_os, "O_BINARY", 0) | getattr(_os, "O_CLOEXEC", 0))
    fd = _os.open(path, flags)
    with _os.fdopen(fd, "rb") as f:
        _check_regular(path, *_mode_size(_os.fstat(fd)))  # the same file as stat() saw
        data = f.read(_MAX_FILE_BYTES + 1)
    if len(data) > _MAX_FILE_BYTES:
        _check_regular(path, _stat.S_IFREG, len(data))
    return _inflate(data, path) if data[:2] == b"\x1f\x8b" else data


_INFLATE_STEP = 1 << 20


def _inflate(data, path):
    """gzip data (any number of members, zero bytes between and after them)
    inflated a step at a time, no more than _MAX_FILE_BYTES of it."""
    steps = (data[k:k + _INFLATE_STEP] for k in range(0, len(data), _INFLATE_STEP))
    return b"".join(_inflate_steps(steps, path, _MAX_FILE_BYTES))


def _inflate_steps(blocks, path, limit=None):
    """The inflated pieces (at most _INFLATE_STEP bytes each) of gzip data
    given as an iterable of blocks: any number of members, zero bytes between
    and after them; more than `limit` bytes inflated (None: no limit) or a
    broken stream is a ValueError naming `path`.  Memory: a block and a step."""
    import zlib

    blocks = iter(blocks)
    size = 0
    pending, d = b"", None  # input not yet inflated; the member being inflated
    try:
        while True:
            if d is None:  # between members
                pending = pending.lstrip(b"\0")
                if not pending:
                    pending = next(blocks, None)
                    if pending is None:
                        return
                    continue
                d = zlib.decompressobj(wbits=31)
            piece = d.decompress(pending, _INFLATE_STEP)
            pending = d.unconsumed_tail
            if piece:
                size += len(piece)
                if limit is not None and size > limit:
                    raise ValueError(f"{path}: more than the {limit} bytes a tokenizer file may "
                                     f"have, once inflated")
                yield piece
            if d.eof:  # what follows the member (unconsumed_tail holds it too)
                pending, d = d.unused_data, None
            elif not piece and not pending:
                pending = next(blocks, None)
                if pending is None:
                    raise ValueError(f"{path}: a broken gzip file (it ends in the middle of "
                                     f"the data)")
    except zlib.error as e:
        raise ValueError(f"{path}: a broken gzip file ({e})") from None


def _text_of(data, path):
    """A file's UTF-8 bytes as text, a leading byte order mark dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start})") from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_text(path):
    """The UTF-8 text of a regular file, plain or gzipped (see _read_file)."""
    return _text_of(_read_file(path), _os.fspath(path))


def _mode_size(st):
    return st.st_mode, st.st_size


def _existing_mode(path):
    """The permission bits of `path` if it is a regular file, else None."""
    try:
        st = _os.stat(path)
    except OSError:
        return None
    return _stat.S_IMODE(st.st_mode) if _stat.S_ISREG(st.st_mode) else None


def _check_not_input(outputs, inputs):
    """What every writer checks before writing anything: ValueError if an
    output is one of the inputs -- the same path, a symbolic link to it, or
    another hard link of the same file."""
    read = []
    for path in inputs:
        try:
            read.append((_os.stat(path), path))
        except (OSError, ValueError):
            pass
    for out in outputs:
        try:
            st = _os.stat(out)
        except (OSError, ValueError):
            continue
        for other, path in read:
            if _os.path.samestat(st, other):
                raise ValueError(f"the output {out} is the input {path}")


def _atomic_write(path, text, keep_mode=None):
    """Write `text` (UTF-8) to `path` atomically: the data goes to a new file
    in the same directory, which is synced, then renamed over `path`, so a
    crash leaves the old file or the new one, never half of one.

    A new file gets the mode open() would give it (0o666 less the umask); a
    file that exists keeps its mode (`keep_mode`: the mode of one the caller
    removed).  On Linux the data is written to an
    unnamed file (O_TMPFILE) that gets a name only just before the rename, so
    a process killed while writing leaves nothing behind; elsewhere the
    temporary name is hidden, ends in ".tmp" and is removed on any error."""
    path = _os.fspath(path)
    if isinstance(path, bytes):
        path = _os.fsdecode(path)
    data = text.encode("utf-8")
    directory = _os.path.dirname(_os.path.abspath(path))
    if keep_mode is None:
        keep_mode = _existing_mode(path)
    fd, tmp = _open_unnamed(directory, path)
    try:
        try:
            if keep_mode is not None and hasattr(_os, "fchmod"):
                _os.fchmod(fd, keep_mode)
            view = memoryview(data)
            while view:
                view = view[_os.write(fd, view):]
            _os.fsync(fd)
            if tmp is None:
                tmp = _link_unnamed(fd, directory, path)
        finally:
            _os.close(fd)
        if tmp is None:  # no way to give the unnamed file a name: write a named one
            _atomic_write_named(path, data, directory, keep_mode)
            return
        _os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            _unlink_quietly(tmp)
    _sync_directory(directory)


def _temp_name(directory, path):
    base = _os.path.basename(path)[:100]
    return _os.path.join(directory, f".{base}.{_os.urandom(6).hex()}.tmp")


def _unlink_quietly(path):
    """Remove a temporary file on the way out of an error (or a success that
    no longer needs it); one that is already gone, or cannot go, is left."""
    try:
        _os.unlink(path)
    except OSError:
        pass


def _open_unnamed(directory, path):
    """(fd, None) for an unnamed file in `directory` (Linux O_TMPFILE), else
    (fd, name) for a new hidden file."""
    flags = _os.O_WRONLY | getattr(_os, "O_CLOEXEC", 0) | getattr(_os, "O_BINARY", 0)
    if hasattr(_os, "O_TMPFILE"):
        try:
            return _os.open(directory, flags | _os.O_TMPFILE, 0o666), None
        except OSError:
            pass  # not supported by this file system
    return _open_named(directory, path, flags)


def _open_named(directory, path, flags):
    while True:
        tmp = _temp_name(directory, path)
        try:
            return _os.open(tmp, flags | _os.O_CREAT | _os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _link_unnamed(fd, directory, path):
    """Give the unnamed file `fd` a hidden temporary name; None if impossible."""
    tmp = _temp_name(directory, path)
    try:
        _os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
    except (OSError, NotImplementedError):
        return None
    return tmp


def _atomic_write_named(path, data, directory, keep_mode):
    flags = _os.O_WRONLY | getattr(_os, "O_CLOEXEC", 0) | getattr(_os, "O_BINARY", 0)
    fd, tmp = _open_named(directory, path, flags)
    try:
        with _os.fdopen(fd, "wb") as f:
            if keep_mode is not None and hasattr(_os, "fchmod"):
                _os.fchmod(f.fileno(), keep_mode)
            f.write(data)
            f.flush()
            _os.fsync(f.fileno())
        _os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _sync_directory(directory)


def _sync_directory(directory):
    """Make the rename itself durable (POSIX); best effort."""
    try:
        fd = _os.open(directory, _os.O_RDONLY)
    except OSError:
        return
    try:
        _os.fsync(fd)
    except OSError:
        pass
    finally:
        _os.close(fd)


def _open_temporary(directory, name):
    """A file to write before it is renamed over `name`: (fd, path or None).
    Where the system can (Linux), it has no name until it is complete, so a
    process killed while writing leaves nothing behind.  Its mode is the one
    open() gives (0666 less the umask).  It is open for reading too (what
    was written may be moved: encode_files splits one document so)."""
    flags = _os.O_RDWR | getattr(_os, "O_CLOEXEC", 0)
    if hasattr(_os, "O_TMPFILE") and _os.path.isdir("/proc/self/fd"):
        try:
            return _os.open(directory, _os.O_TMPFILE | flags, 0o666), None
        except OSError:
            pass  # a file system without unnamed files
    tmp = _os.path.join(directory, f".tmp-{_os.urandom(6).hex()}-{name}")
    return _os.open(tmp, _os.O_CREAT | _os.O_EXCL | flags, 0o666), tmp


def _name_temporary(fd, path):
    """A hidden name beside `path` for the unnamed temporary file `fd`."""
    tmp = _os.path.join(_os.path.dirname(path),
                        f".tmp-{_os.urandom(6).hex()}-{_os.path.basename(path)}")
    fds = _os.open("/proc/self/fd", _os.O_RDONLY)
    try:  # linkat(..., AT_SYMLINK_FOLLOW): the file the descriptor's link points to
        _os.link(str(fd), tmp, src_dir_fd=fds, follow_symlinks=True)
    finally:
        _os.close(fds)
    return tmp


def _publish(fd, tmp, path):
    """Give the complete temporary file its final name (replacing any file)."""
    if tmp is None:
        tmp = _name_temporary(fd, path)
    try:
        _os.replace(tmp, path)
    except BaseException:
        _os.unlink(tmp)
        raise


class FileSet:
    """Files published as a set (train and validation arrays with their
    sidecars, a transformers directory, Dask shards with their index, for
    tools/train_dask.py or any program): each is
    written in full to a temporary file beside it, then, once all are
    written and synced, all are renamed into place.  An error before that
    (a full disk on the last file) leaves the old files as they were and no
    temporary behind; an error among the renames puts back the old files it
    had replaced (kept under hidden names until the set is in place).

        with FileSet() as files:
            fd = files.open(path)      # a descriptor to write the file to
            files.text(other, text)    # or a whole text
            files.publish()

    A file that `describes` others (a sidecar) loses its old version before
    any file of the set is renamed: for no moment does it describe a new file."""

    def __init__(self):
        self._items = []  # [path, fd, temporary name or None (unnamed), describes]

    def __enter__(self):
        return self

    def open(self, path, keep_mode=None, describes=False):
        """A descriptor to write `path`'s new content to; the file gets the mode
        of the one it replaces (`keep_mode`: of one the caller removed), else
        the mode open() gives."""
        path = _os.path.abspath(_os.fsdecode(_os.fspath(path)))
        if keep_mode is None:
            keep_mode = _existing_mode(path)
        fd, tmp = _open_temporary(_os.path.dirname(path), _os.path.basename(path))
        self._items.append([path, fd, tmp, describes])
        if keep_mode is not None and hasattr(_os, "fchmod"):
            _os.fchmod(fd, keep_mode)
        return fd

    def adopt(self, written, path, describes=False):
        """Publish `written`, a complete file (synced, in `path`'s directory, made
        by another process: a Dask worker's shard), as `path`; removed if the
        set is not published."""
        self._items.append([_os.path.abspath(_os.fsdecode(_os.fspath(path))), None,
                            _os.fsdecode(_os.fspath(written)), describes])

    def text(self, path, text, keep_mode=None, describes=False):
        """`path`'s new content: a text, UTF-8."""
        fd = self.open(path, keep_mode, describes)
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[_os.write(fd, view):]

    def publish(self):
        for item in self._items:
            if item[1] is not None:
                _os.fsync(item[1])
        for item in self._items:  # every file gets a name before any is renamed
            if item[2] is None:
                item[2] = _name_temporary(item[1], item[0])
        order = sorted(self._items, key=lambda item: not item[3])  # sidecars' old ones first
        kept = {}  # path -> the hidden name of the file it had (a hard link to it)
        done = []  # the paths replaced or removed so far
        try:
            for path, _, _, _ in order:
                if _os.path.isfile(path) and not _os.path.islink(path):
                    backup = _temp_name(_os.path.dirname(path), path)
                    try:
                        _os.link(path, backup)
                    except OSError:  # a file system without hard links: no way back
                        continue
                    kept[path] = backup
            for path, _, _, describes in order:
                if describes and path in kept:
                    _os.unlink(path)
                    done.append(path)
            for item in order:
                _os.replace(item[2], item[0])
                item[2] = None
                done.append(item[0])
        except BaseException:
            for path in set(done):  # the others still are the old files
                try:
                    if path in kept:
                        _os.replace(kept.pop(path), path)
                    else:
                        _os.unlink(path)
                except OSError:
                    pass
            raise
        finally:
            for backup in kept.values():
                _unlink_quietly(backup)
        for directory in {_os.path.dirname(item[0]) for item in self._items}:
            _sync_directory(directory)

    def __exit__(self, kind, value, traceback):
        for _, fd, tmp, _ in self._items:
            if fd is not None:
                _os.close(fd)
            if tmp is not None:
                _unlink_quietly(tmp)
        return False


# --------------------------------------------------------------------------
# File formats: native, GPT-2's vocab.json + merges.txt, tiktoken, Hugging Face
# tokenizer.json (with its Oniguruma pattern translator), and from_file
# --------------------------------------------------------------------------


# GPT-2's printable form of bytes (vocab.json, merges.txt, tokenizer.json and
# the native format all write tokens this way)

def _make_byte_unicode():
    printable = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    to_char, shifted = [], 0
    for b in range(256):
        if b in printable:
            to_char.append(chr(b))
        else:
            to_char.append(chr(256 + shifted))
            shifted += 1
    return to_char


_BYTE_TO_CHAR = _make_byte_unicode()
_ENCODE_TABLE = {b: c for b, c in enumerate(_BYTE_TO_CHAR)}
# every char that is not a valid printable form maps to one latin-1 can't encode
_DECODE_TABLE = {ord(c): chr(b) for b, c in enumerate(_BYTE_TO_CHAR)}
for _b in range(256):
    if _BYTE_TO_CHAR[_b] != chr(_b):
        _DECODE_TABLE[_b] = "\U0010ffff"


def token_to_str(token):
    """GPT-2's printable form of a token's bytes: ``b" the"`` -> ``"Ġthe"``.

    >>> token_to_str(b" the"), token_to_str(b"\\n\\xff")
    ('Ġthe', 'Ċÿ')
    """
    return token.decode("latin-1").translate(_ENCODE_TABLE)


def str_to_token(text):
    """Inverse of token_to_str; ValueError for text that is not such a form.

    >>> str_to_token("Ġthe")
    b' the'
    """
    try:
        return text.translate(_DECODE_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"{_short(text)} is not a byte-level token (GPT-2's byte-to-unicode "
                         f"form)") from None


def _json(text, where):
    """json.loads, with every failure (nesting too deep included) as ValueError."""
    import json

    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{where}: not valid JSON: {str(e)[:100]}") from None


def _json_ids(raw, where, field):
    """Check a JSON object of token -> id; ValueError naming `field`."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: {field} must be a JSON object of token -> id, not "
                         f"{_json_type(raw)}")
    seen = {}
    for s, i in raw.items():
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            raise ValueError(f"{where}: {field}: the id of {_short(s)} must be an int in "
                             f"[0, 2**31), not {_short(i)}")
        other = seen.setdefault(i, s)
        if other != s:
            raise ValueError(f"{where}: {field}: id {i} is given to both {_short(other)} and "
                             f"{_short(s)}")
    return raw


def _json_type(value):
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)
def _split_lines(text):
    """Lines of a text file; a CR before each LF (Windows line ends) is dropped."""
    lines = text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _is_id(text):
    """ASCII digits only (str.isdigit also takes "٢" and "²"), at most 10."""
    return 0 < len(text) <= 10 and text.isascii() and text.isdigit()


class _Lines:
    """A cursor over a file's lines that reports errors with line numbers."""

    def __init__(self, text, where):
        self.lines = _split_lines(text)
        self.n = 0
        self.where = where

    def fail(self, what):
        raise ValueError(f"{self.where}: line {self.n}: {what}")

    def next(self):
        if self.n >= len(self.lines):
            self.n += 1
            self.fail("unexpected end of file (truncated?)")
        line = self.lines[self.n]
        self.n += 1
        return line

    def section(self, name):
        line = self.next()
        head, _, count = line.partition(" ")
        if head != name or not _is_id(count):
            self.fail(f"expected '{name} <count>', found {_short(line)}")
        return int(count)

    def fields(self, n):
        parts = self.next().split(" ", n - 1)
        if len(parts) != n:
            self.fail(f"expected {n} fields")
        return parts

    def int(self, text):
        if not _is_id(text):
            self.fail(f"{_short(text)} is not an id (ASCII digits)")
        return int(text)


_NATIVE_MAGIC = "#bpe-tokenizer"
_NATIVE_VERSION = 1


def _native_dump(tok):
    import json

    lines = [f"{_NATIVE_MAGIC} {_NATIVE_VERSION}",
             "pattern " + json.dumps(_pattern_json(tok._pattern))]
    made = set(tok._rank_id)
    plain = sorted((i, t) for i, t in tok._tokens.items() if i not in made)
    lines.append(f"tokens {len(plain)}")
    lines += [f"{i} {token_to_str(t)}" for i, t in plain]
    lines.append(f"merges {len(tok._merges)}")
    lines += [f"{i} {token_to_str(a)} {token_to_str(b)}"
              for i, (a, b) in zip(tok._rank_id, tok._merges)]
    lines.append(f"specials {len(tok._specials)}")
    lines += [f"{i} {json.dumps(s)}"
              for s, i in sorted(tok._specials.items(), key=lambda kv: kv[1])]
    lines.append("end")
    return "\n".join(lines) + "\n"


def _pattern_json(pattern):
    """A pattern as the native format writes it: the regex, or a Pipeline's
    {"normalizers": [...], "splits": [...]}."""
    if isinstance(pattern, Pipeline):
        return {"normalizers": list(pattern.normalizers), "splits": list(pattern.splits)}
    return pattern


def _native_parse(text, where):
    c = _Lines(text, where)
    pattern = _native_head(c)
    tokens, merged = {}, set()

    def add(i, t, merge=False):
        if i in tokens and not (merge and i in merged and tokens[i] == t):
            c.fail(f"id {i} appears twice")  # (several merges may make one token)
        tokens[i] = t
        if merge:
            merged.add(i)

    for _ in range(c.section("tokens")):
        i, t = c.fields(2)
        i = c.int(i)
        try:
            add(i, str_to_token(t))
        except ValueError as e:
            c.fail(str(e))
    merges = []
    for _ in range(c.section("merges")):
        i, a, b = c.fields(3)
        i = c.int(i)
        try:
            a, b = str_to_token(a), str_to_token(b)
        except ValueError as e:
            c.fail(str(e))
        add(i, a + b, merge=True)
        merges.append((a, b))
    return pattern, tokens, merges, _native_specials(c)


def _native_head(c):
    """The header and pattern lines of a native file: the pattern."""
    import json

    head = c.next().split(" ")
    if len(head) != 2 or head[0] != _NATIVE_MAGIC:
        c.fail(f"not a bpe tokenizer file (expected '{_NATIVE_MAGIC} {_NATIVE_VERSION}')")
    if head[1] != str(_NATIVE_VERSION):
        c.fail(f"unsupported format version {_short(head[1])} (this library reads "
               f"{_NATIVE_VERSION})")
    line = c.next()
    if not line.startswith("pattern "):
        c.fail("expected 'pattern <json string>'")
    try:
        pattern = json.loads(line[8:])
    except (ValueError, RecursionError):
        pattern = None
    if isinstance(pattern, dict) and set(pattern) == {"normalizers", "splits"}:
        if not all(isinstance(x, list) for x in pattern.values()):
            c.fail("a pipeline's normalizers and splits are JSON arrays")
        pattern = Pipeline(tuple(pattern["normalizers"]), tuple(pattern["splits"]))
    elif not isinstance(pattern, str):
        c.fail("the pattern is not a JSON string, or an object of normalizers and splits")
    try:
        if isinstance(pattern, Pipeline):
            if _check_pattern(pattern) != pattern:
                c.fail("a pipeline that is one plain regex is written as that regex")
        else:
            _compile_pattern(pattern)
    except (ValueError, TypeError, RecursionError) as e:
        c.fail(f"bad pattern: {str(e)[:200]}")
    return pattern


def _native_specials(c):
    """The specials section and the end of a native file."""
    import json

    specials = {}
    for _ in range(c.section("specials")):
        i, s = c.fields(2)
        i = c.int(i)
        try:
            s = json.loads(s)
        except (ValueError, RecursionError):
            s = None
        if not isinstance(s, str) or s in specials:
            c.fail("bad or repeated special token")
        try:
            _check_special_text(s)
        except ValueError as e:
            c.fail(str(e))
        specials[s] = i
    if c.next() != "end" or any(line for line in c.lines[c.n:]):
        c.fail("expected 'end' as the last line")
    return specials


# GPT-2's vocab.json + merges.txt.  save_gpt2 writes a fingerprint of the pair
# into merges.txt's first line ("#version: 0.2 bpe-pair:<hex>"; tokenizers,
# transformers and GPT-2's own encoder skip that line), which from_gpt2 checks.

_GPT2_FINGERPRINT = _regex.compile(r"\bbpe-pair:([0-9a-f]{32})\b")


def _gpt2_fingerprint(raw, merge_lines):
    """A digest of vocab.json's entries (by id) and merges.txt's lines."""
    import hashlib

    h = hashlib.sha256()
    h.update("\n".join(f"{i} {s}" for s, i in sorted(raw.items(), key=lambda kv: kv[1]))
             .encode("utf-8", "surrogatepass"))
    h.update(b"\n\x00\n")
    h.update("\n".join(merge_lines).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def _gpt2_parse(vocab_text, merges_text, special_tokens, vocab_where, merges_where):
    raw = _json_ids(_json(vocab_text, vocab_where), vocab_where, "vocab.json")
    merges, merge_lines, fingerprint = [], [], None
    c = _Lines(merges_text, merges_where)
    for line in c.lines:
        c.n += 1
        if c.n == 1 and line.startswith("#version"):
            m = _GPT2_FINGERPRINT.search(line)
            fingerprint = m.group(1) if m else None
            continue
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            c.fail(f"expected 'left right', found {_short(line)}")
        try:
            merges.append((str_to_token(parts[0]), str_to_token(parts[1])))
        except ValueError as e:
            c.fail(str(e))
        merge_lines.append(line)
    if fingerprint is not None and fingerprint != _gpt2_fingerprint(raw, merge_lines):
        raise ValueError(f"{vocab_where} and {merges_where} do not belong together: merges.txt "
                         f"was saved with another vocab.json, or one of them was edited since (to "
                         f"load an edited pair, delete 'bpe-pair:...' from merges.txt's first "
                         f"line)")
    tokens, specials = _gpt2_vocab(raw, merges, special_tokens, fingerprint is not None,
                                   f"{vocab_where} and {merges_where}")
    return tokens, merges, specials


def _looks_special(s):
    """<...> or [...]: how special tokens are spelled (<|endoftext|>, <s>, [PAD])."""
    return len(s) >= 3 and ((s[0] == "<" and s[-1] == ">") or (s[0] == "[" and s[-1] == "]"))


def _gpt2_vocab(raw, merges, special_tokens, paired, where):
    """Split vocab.json's entries into tokens (id -> bytes) and specials.

    Every entry must be a single byte, made by a merge, or a special token.
    With special_tokens None, the entries no merge makes are the specials:
    all of them for a pair save_gpt2 wrote (`paired`: its fingerprint
    matched); for other files, each must look like a special token (<...>,
    [...]) or be no join of two other entries: an entry that two others make
    up is a token whose merge line is missing, and the files do not belong
    together."""
    made = {a + b for a, b in merges} | {bytes([b]) for b in range(256)}
    specials = {}
    special_tokens = _special_set(special_tokens)
    if special_tokens is not None:
        if isinstance(special_tokens, _abc.Mapping):
            for s, i in special_tokens.items():
                _check_special_text(s)
                if isinstance(i, bool) or not isinstance(i, int):
                    raise TypeError(f"special_tokens must map str to int ids, not {_short(s)} -> "
                                    f"{_short(i)}")
                specials[s] = i
        else:
            next_id = max(raw.values(), default=-1) + 1
            for s in _check_specials(special_tokens):
                if s in raw:
                    specials[s] = raw[s]
                else:
                    specials[s] = next_id
                    next_id += 1
    special_ids = set(specials.values())
    tokens, unmade = {}, []
    for s, i in raw.items():
        if i in special_ids:
            continue
        try:
            t = str_to_token(s)
        except ValueError:
            t = None
        if t is not None and t in made:
            tokens[i] = t
        else:
            unmade.append((s, i, t))
    if not unmade:
        return tokens, specials
    if special_tokens is not None:
        s, i, _ = unmade[0]
        raise ValueError(f"{where} do not belong together, or special_tokens is incomplete: "
                         f"{len(unmade)} entries of vocab.json are no single byte, no merge makes "
                         f"them and special_tokens does not name them, e.g. {_short(s)} (id {i})")
    if not paired:
        entries = {t for _, _, t in unmade if t is not None} | made
        joined = [(s, i) for s, i, t in unmade if t is not None and not _looks_special(s)
                  and any(t[:k] in entries and t[k:] in entries for k in range(1, len(t)))]
        if joined:
            s, i = joined[0]
            raise ValueError(f"{where} do not belong together: {len(joined)} entries of vocab.json "
                             f"join two other entries but no merge in merges.txt makes them, e.g. "
                             f"{_short(s)} (id {i}); merges.txt is cut short or from another "
                             f"vocabulary")
    for s, i, _ in unmade:
        try:
            _check_special_text(s)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        specials[s] = i
    return tokens, specials


def _one_name_per_id(tok, target):
    """ValueError where special tokens share an id: `target` gives an id one name."""
    seen = {}
    for s, i in tok._specials.items():
        if seen.setdefault(i, s) != s:
            raise ValueError(f"special tokens {_short(seen[i])} and {_short(s)} share id {i}, "
                             f"which {target} cannot hold (it gives an id one token)")


def _gpt2_dump(tok):
    import json

    found = _unrebuilt_token(tok)  # GPT-2's readers apply the merges only
    if found is not None:
        i, t, ids = found
        raise ValueError(f"GPT-2's merges.txt cannot express token {_short(t)} (id {i}): merges "
                         f"alone make {_short(ids)} of its text, this tokenizer gives the token")

    vocab = {token_to_str(t): i for i, t in tok._tokens.items()}
    for s, i in tok._specials.items():
        if s in vocab:
            raise ValueError(f"special token {_short(s)} has the same text as token {vocab[s]} in "
                             "vocab.json")
        vocab[s] = i
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    lines = [f"{token_to_str(a)} {token_to_str(b)}" for a, b in tok._merges]
    head = f"#version: 0.2 bpe-pair:{_gpt2_fingerprint(vocab, lines)}\n"
    return json.dumps(vocab, ensure_ascii=False), head + "".join(line + "\n" for line in lines)


# tiktoken's format: "base64(token) rank" lines; the merges are recovered.

def _tiktoken_parse(text, where):
    import base64

    ranks = {}
    c = _Lines(text, where)
    for line in c.lines:
        c.n += 1
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            c.fail("expected '<base64 token> <rank>'")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except ValueError:
            c.fail(f"{_short(parts[0])} is not base64")
        rank = c.int(parts[1])
        if not token or token in ranks:
            c.fail(f"empty or repeated token {_short(token)}")
        ranks[token] = rank
    if not ranks:
        raise ValueError(f"{where}: no tokens")
    return ranks


def _tiktoken_model(ranks, where):
    """Tokens (id -> bytes) and the merges that ranks imply, by tiktoken's
    own encoding rule: each multi-byte token splits into the two pieces that
    byte-pair encoding with the lower-ranked tokens leaves.  Where that
    leaves three or more, tiktoken's merging of the token's bytes goes on
    with higher-ranked tokens; if it gets down to two pieces, they join into
    the token at its own rank (a merge of a token a later merge makes: 90 of
    Llama 3's tokens), else no merge makes the token and it is given only for
    a pre-token that is the token itself (588 of Llama 3's)."""
    tokens = {}
    for t, r in ranks.items():
        if not isinstance(t, bytes) or isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"{where}: ranks must map bytes to int, not {_short(t)} -> {_short(r)}")
        if not t or not 0 <= r < _MAX_ID:
            raise ValueError(f"{where}: bad entry {_short(t)} -> {_short(r)} (tokens are "
                             "non-empty, "
                             f"ranks ints in [0, 2**31))")
        if tokens.setdefault(r, t) != t:
            raise ValueError(f"{where}: rank {r} is given to both {_short(tokens[r])} and "
                             f"{_short(t)}")
    merges = []
    for r, t in sorted(tokens.items()):
        if len(t) < 2:
            continue
        parts = _rank_split(t, ranks, r)
        if len(parts) > 2:
            parts = _rank_split(t, ranks, _MAX_ID)
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
    return tokens, merges


def _rank_split(t, ranks, r):
    """Byte-pair encode `t` with the tokens ranked below `r`: repeatedly join
    the adjacent pair whose join has the lowest rank (leftmost first), down
    to two pieces at least.  A heap over a linked list: O(n log n) steps for
    a token of n bytes."""
    get = ranks.get
    n = len(t)
    if n <= 16:  # short tokens: a plain scan is faster
        parts = [t[i:i + 1] for i in range(n)]
        while len(parts) > 2:
            best, at = r, -1
            for i in range(len(parts) - 1):
                q = get(parts[i] + parts[i + 1])
                if q is not None and q < best:
                    best, at = q, i
            if at < 0:
                break
            parts[at:at + 2] = [parts[at] + parts[at + 1]]
        return parts
    sym = [t[i:i + 1] for i in range(n)]
    nxt = list(range(1, n)) + [-1]
    prv = list(range(-1, n - 1))
    heap = []

    def push(p, q):
        join = sym[p] + sym[q]
        rank = get(join)
        if rank is not None and rank < r and join != t:
            _heapq.heappush(heap, (rank, p, sym[p], sym[q]))

    for i in range(n - 1):
        push(i, i + 1)
    while heap:
        _, p, left, right = _heapq.heappop(heap)
        q = nxt[p] if sym[p] is left else -1
        if q < 0 or sym[q] is not right:
            continue  # stale: a neighbour changed since
        sym[p] = left + right
        sym[q] = None
        nxt[p] = nxt[q]
        if nxt[p] >= 0:
            prv[nxt[p]] = p
            push(p, nxt[p])
        if prv[p] >= 0:
            push(prv[p], p)
    return [s for s in sym if s is not None]


def _check_rank_order(tok):
    if isinstance(tok._pattern, Pipeline):
        raise ValueError("tiktoken splits by one regex and normalizes nothing; this tokenizer's "
                         "pattern is a Pipeline: save_huggingface or save can hold it")
    ids = tok._rank_id
    for k, (a, b) in enumerate(zip(ids, ids[1:])):
        if a >= b:
            raise ValueError(f"tiktoken uses ids as merge ranks, but this tokenizer's merge "
                             f"results do not have increasing ids: merge {k + 1} makes "
                             f"{_short(tok._tokens[b])} (id {b}) after merge {k} made "
                             f"{_short(tok._tokens[a])} (id {a})")


_BACKREFERENCE = _regex.compile(r"\\(?:[1-9]|k<|g)|\(\?P=")


def _tiktoken_pattern(pattern):
    r"""`pattern` for tiktoken's regex engine, with this library's meaning.
    tiktoken drops the text between two matches; here it is a pre-token of
    its own.  A named pattern leaves no such text; another is written as
    ``(?:P)|(?:(?!(?:P))[\s\S])+`` (a run of characters where no match
    starts), P in the form written for Oniguruma where it has one (explicit
    code point ranges, possessive repeats as atomic groups), which tiktoken's
    engine reads alike.  A back-reference would refer to the wrong copy: a
    ValueError."""
    if pattern in _NAMED_PATTERNS:
        return pattern
    if _BACKREFERENCE.search(pattern):
        raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken, which "
                         "drops the text between matches, with a back-reference in it")
    try:
        nullable = _nullable(_RegexReader(pattern, onig=False).parse())
    except RecursionError:
        nullable = False
    except ValueError as e:  # syntax this library's reader does not parse: tiktoken reads it,
        if "repeated anchor" in str(e):  # but for a repeated anchor, otherwise than regex
            raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken: {e}; "
                             "tiktoken's regex engine reads it otherwise") from None
        nullable = False
    if nullable:
        raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken: it can "
                         "match the empty string")
    try:
        # tiktoken's engine reads \Z as "before any final run of newlines": write regex's
        # end-or-before-a-final-newline out (an export's only "\Z" is that anchor)
        body = _onig_body(pattern).replace("\\Z", "(?=\\n?\\z)")
    except ValueError:
        body = pattern
        if "$" in pattern or "\\Z" in pattern:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken, whose "
                             "regex engine reads $ and \\Z otherwise than regex") from None
        rx = _compile_pattern(pattern)
        if rx.fullmatch("") is not None or any(
                m.start() == m.end() for text in _TIKTOKEN_PROBES for m in rx.finditer(text)):
            raise ValueError(f"cannot write the pattern {_short(pattern)} for tiktoken: it can "
                             "match the empty string (tiktoken fails on an empty match)") from None
    return f"(?:{body})|(?:(?!(?:{body}))[\\s\\S])+"


# Texts an Encoding from to_tiktoken must encode as this library does before it is given
_TIKTOKEN_PROBES = (_PROBE, "", "a", "\n", "a\n", "\n\n", "a\n\n", "a \n\n\n",
                    " \n a\n\nb 12345 x\n",
                    "AbC aBc ſK k ß straße 日本語\u3000\x85\u2028 \U0001F600\n")


def _tiktoken_checked(tok, enc):
    """`enc` (tiktoken's Encoding of `tok`) once it encodes the probe texts to
    tok's ids; else ValueError (tiktoken panics on some patterns)."""
    for text in _TIKTOKEN_PROBES:
        try:
            ids = enc.encode_ordinary(text)
        except BaseException as e:  # pyo3's PanicException derives from BaseException
            if not type(e).__name__.endswith("PanicException"):
                raise
            raise ValueError(f"tiktoken fails on the pattern {_short(tok._pattern)} as written "
                             f"for it ({_short(str(e))}); not exported") from None
        if ids != tok.encode_ordinary(text):
            raise ValueError(f"tiktoken's regex engine reads the pattern {_short(tok._pattern)} "
                             f"otherwise (the text {_short(text)} gives other ids); not "
                             "exported")
    return enc


def _tiktoken_dump(tok):
    import base64

    _check_tiktoken_exact(tok)
    return "".join(f"{base64.b64encode(t).decode('ascii')} {i}\n"
                   for i, t in sorted(tok._tokens.items()))


# --------------------------------------------------------------------------
# Patterns in tokenizer.json: Hugging Face tokenizers runs them with Oniguruma,
# which reads some syntax and Unicode otherwise than `regex`.  An export spells
# every class, property and case-insensitive letter as explicit code point
# ranges (possessive repeats as atomic groups); an import maps the syntax it
# can map exactly and refuses the rest, and any pattern matching "".
# --------------------------------------------------------------------------


_ALL_CHARS = []   # [every code point but the surrogates, in order], built on first use
_CHAR_RANGES = {}
_TO_ONIG = {}
_ONIG_MAX_REPEAT = 100000
_LOOK = ("ahead", "not_ahead", "behind", "not_behind")
# Unicode properties an import accepts: general categories and common scripts,
# which both engines name alike.
_ONIG_PROPERTIES = frozenset(
    "L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp Cc Cf "
    "Co Han Hiragana Katakana Hangul Latin Greek Cyrillic Arabic Hebrew Thai Devanagari".split())
_QUANTIFIER = _regex.compile(r"\{(\d{0,6})(?:(,)(\d{0,6}))?\}")
_GROUP_NAME = _regex.compile(r"\?P?<([A-Za-z_][A-Za-z0-9_]*)>")


def _all_chars():
    if not _ALL_CHARS:
        codes = _array.array("I", range(0xD800))
        codes.extend(range(0xE000, 0x110000))
        if codes.itemsize == 4:
            order = "utf-32-le" if _sys.byteorder == "little" else "utf-32-be"
            text = codes.tobytes().decode(order)
        else:  # pragma: no cover
            text = "".join(map(chr, codes))
        _ALL_CHARS.append(text)
    return _ALL_CHARS[0]


def _char_ranges(atom):
    """The code points `regex` matches with the one-character pattern `atom`,
    as sorted inclusive ranges (surrogates, which text never holds, left out)."""
    ranges = _CHAR_RANGES.get(atom)
    if ranges is None:
        ranges = []
        for m in _regex.finditer(f"(?:{atom})+", _all_chars()):
            a, b = m.start(), m.end() - 1
            if a < 0xD800 <= b:
                ranges += [(a, 0xD7FF), (0xE000, b + 0x800)]
            else:
                ranges.append((a + 0x800 if a >= 0xD800 else a, b + 0x800 if b >= 0xD800 else b))
        _CHAR_RANGES[atom] = ranges
    return ranges


class _RegexReader:
    """A parser for the regular expressions both engines can share.  `onig`:
    read Oniguruma's (Ruby) syntax, else `regex`'s.  The tree: a list of
    alternatives, each a list of nodes:
      ("char", c, icase)          a literal character
      ("set", text, icase)        regex syntax: a class or class escape (from `regex` syntax)
      ("cls", negated, members)   from Oniguruma syntax: members are ("char", c),
                                  ("range", a, b) or ("text", regex text)
      ("raw", regex text)         from Oniguruma syntax: a class escape
      ("any",)  ("anchor", kind)  ("group", kind, alternatives)
      ("repeat", node, low, high or None, "greedy" | "lazy" | "possessive")"""

    def __init__(self, pattern, onig):
        self.p, self.i, self.onig = pattern, 0, onig

    def fail(self, what):
        raise ValueError(f"{what} (at character {self.i})")

    def peek(self, text):
        return self.p.startswith(text, self.i)

    def parse(self):
        alts = self.alternatives(False)
        if self.i < len(self.p):
            self.fail("unbalanced ')'")
        return alts

    def alternatives(self, icase):
        alts = [self.sequence(icase)]
        while self.peek("|"):
            self.i += 1
            alts.append(self.sequence(icase))
        return alts

    def sequence(self, icase):
        nodes = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            if self.onig and self.peek("(?#"):  # a comment
                self.comment()
                continue
            nodes.append(self.repeat(self.atom(icase), icase))
        if icase and self.onig:
            self.check_folds(nodes)
        return nodes

    def atom(self, icase):
        c = self.p[self.i]
        self.i += 1
        if c == "(":
            if icase and self.onig:
                self.fail("(?i) with a group inside")
            return self.group(icase)
        if c == "[":
            return self.char_class(icase)
        if c == "\\":
            kind, value = self.escape()
            if kind == "char":
                return self.char(value, icase)
            if kind == "anchor":
                return ("anchor", value)
            return self.class_escape(kind, value, icase)
        if c == ".":
            return ("any",)
        if c == "^":
            return ("anchor", "line_start" if self.onig else "start")
        if c == "$":
            return ("anchor", "line_end" if self.onig else "end")
        if c in "*+?":
            self.i -= 1
            self.fail(f"'{c}' repeats nothing")
        if c == "{":
            self.i -= 1
            self.fail("a literal '{' (write '\\{')")
        return self.char(c, icase)

    def comment(self):
        i = self.i + 3
        while i < len(self.p) and self.p[i] != ")":
            i += 2 if self.p[i] == "\\" else 1
        if i >= len(self.p):
            self.fail("an unclosed comment")
        self.i = i + 1

    def char(self, c, icase):
        if icase and self.onig and (not c.isascii() or c in "iI"):
            self.fail(f"(?i) with {c!r}: Oniguruma folds it otherwise than regex")
        return ("char", c, icase)

    def class_escape(self, kind, value, icase):
        if not self.onig:
            return ("set", value, icase)
        if icase:
            self.fail(f"(?i) with {value}: Oniguruma folds it otherwise than regex")
        return ("raw", value)

    def group(self, icase):
        kind = "group"
        if self.peek("?"):
            for prefix, name in (("?:", "group"), ("?>", "atomic"), ("?=", "ahead"),
                                 ("?!", "not_ahead"), ("?<=", "behind"), ("?<!", "not_behind"),
                                 ("?i:", "icase")):
                if self.peek(prefix):
                    self.i += len(prefix)
                    kind = name
                    break
            else:
                m = _GROUP_NAME.match(self.p, self.i)
                if m is None or (self.onig and self.peek("?P")):
                    self.fail(f"the group '({_short(self.p[self.i:self.i + 4])[1:-1]}' is not "
                              "supported")
                self.i = m.end()
        alts = self.alternatives(icase or kind == "icase")
        if not self.peek(")"):
            self.fail("missing ')'")
        self.i += 1
        return ("group", kind, alts)

    def quantifier(self):
        """(low, high, braces, fixed) of a repeat operator at the cursor, or
        None; fixed: written {n}, without a comma."""
        c = self.p[self.i:self.i + 1]
        if c in ("*", "+", "?") and c:
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c] + (False, False)
        m = _QUANTIFIER.match(self.p, self.i)
        if c != "{" or m is None or not (m.group(1) or m.group(3)):
            return None
        low = int(m.group(1) or 0)
        high = (int(m.group(3)) if m.group(3) else None) if m.group(2) else low
        if (high is not None and high < low) or max(low, high or 0) > _ONIG_MAX_REPEAT:
            self.fail(f"the repeat {m.group()} (at most {_ONIG_MAX_REPEAT})")
        self.i = m.end()
        return low, high, True, not m.group(2)

    def repeat(self, node, icase):
        q = self.quantifier()
        if q is None:
            return node
        if icase and self.onig:  # Oniguruma's folds can span repeats: refuse what is not tested
            self.fail("(?i) with a repeat inside")
        if node[0] == "anchor" or (node[0] == "group" and node[1] in _LOOK):
            self.fail("a repeated anchor or look-around")
        low, high, braces, fixed = q
        mode = "greedy"
        if (self.onig and braces and low == high == 1 and node[0] == "group"
                and (self.peek("+") or (fixed and self.peek("?")))):
            # Oniguruma drops the {1}, and the ? or + then repeats the group's last atom alone
            self.fail("a group repeated {1} then '?' or '+'")
        if self.peek("?"):
            self.i += 1
            if self.onig and fixed:  # Ruby: x{n}? is (?:x{n})? (x{n,n}? is lazy)
                node, low, high = ("repeat", node, low, high, "greedy"), 0, 1
            else:
                mode = "lazy"
        elif self.peek("+"):
            self.i += 1
            if self.onig and braces:  # Ruby: x{n,m}+ is (?:x{n,m})+, not possessive
                node, low, high = ("repeat", node, low, high, "greedy"), 1, None
            else:
                mode = "possessive"
        if self.i < len(self.p) and (self.p[self.i] in "*+?" or _QUANTIFIER.match(self.p, self.i)):
            self.fail("a repeat of a repeat")
        return ("repeat", node, low, high, mode)

    def escape(self):
        """After a backslash: ("char", c), ("anchor", kind), or (kind, regex
        text) for a class escape, kind "class" or "property"."""
        p = self.p
        if self.i >= len(p):
            self.fail("a trailing backslash")
        c = p[self.i]
        self.i += 1
        if c in "sSdD" or (c in "wW" and not self.onig):
            return "class", "\\" + c
        if c in "pP":
            if not self.peek("{"):
                if self.onig or not (self.i < len(p) and p[self.i].isalpha()):
                    self.fail(f"\\{c} without a {{name}}")
                self.i += 1
                return "property", f"\\{c}{{{p[self.i - 1]}}}"
            end = p.find("}", self.i)
            if end < 0:
                self.fail(f"\\{c}{{ without '}}'")
            name = p[self.i + 1:end]
            self.i = end + 1
            negated = c == "P"
            if self.onig and name.startswith("^"):
                name, negated = name[1:], not negated
            if self.onig and name not in _ONIG_PROPERTIES:
                self.fail(f"the Unicode property {_short(name)} (general categories and common "
                          f"scripts only)")
            return "property", f"\\{'P' if negated else 'p'}{{{name}}}"
        if c == "x":
            if self.onig and self.peek("{"):
                m = _regex.compile(r"\{([0-9A-Fa-f]{1,6})\}").match(p, self.i)
                if (m is None or int(m.group(1), 16) > 0x10FFFF
                        or 0xD800 <= int(m.group(1), 16) < 0xE000):
                    self.fail("a bad \\x{...}")
                self.i = m.end()
                return "char", chr(int(m.group(1), 16))
            hex_digits = r"[0-9A-Fa-f]{2}" if not self.onig else r"[0-9A-Fa-f]{1,2}"
            m = _regex.compile(hex_digits).match(p, self.i)
            if m is None:
                self.fail("a bad \\x escape")
            self.i = m.end()
            if self.onig and int(m.group(), 16) > 0x7F:
                self.fail("\\x above 7F (a byte, not a character, in Oniguruma)")
            return "char", chr(int(m.group(), 16))
        if c == "u" or (c == "U" and not self.onig):
            n = 4 if c == "u" else 8
            m = _regex.compile(rf"[0-9A-Fa-f]{{{n}}}").match(p, self.i)
            if m is None or int(m.group(), 16) > 0x10FFFF or 0xD800 <= int(m.group(), 16) < 0xE000:
                self.fail(f"a bad \\{c} escape")
            self.i = m.end()
            return "char", chr(int(m.group(), 16))
        simple = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
        if self.onig:
            simple["e"] = "\x1b"
        if c in simple:
            return "char", simple[c]
        if self.onig:
            anchors = {"A": "start", "Z": "end", "z": "abs_end"}
        else:
            anchors = {"A": "start", "Z": "abs_end"}
        if c in anchors:
            return "anchor", anchors[c]
        if c.isascii() and c.isalnum():
            self.fail(f"the escape \\{c}")
        return "char", c

    def char_class(self, icase):
        start = self.i - 1
        p = self.p
        negated = self.peek("^")
        if negated:
            self.i += 1
        if self.peek("]"):
            self.fail("']' first in a class (write '\\]')")
        members = []
        while True:
            if self.i >= len(p):
                self.fail("missing ']'")
            c = p[self.i]
            if c == "]":
                self.i += 1
                break
            if c == "[":
                self.fail("'[' inside a class (a nested or POSIX class)")
            if self.peek("&&") or (not self.onig and (self.peek("--") or self.peek("||")
                                                       or self.peek("~~"))):
                self.fail("a set operation in a class")
            item = self.class_item()
            if item[0] == "char" and self.peek("-") and p[self.i + 1:self.i + 2] not in ("]", ""):
                self.i += 1
                end = self.class_item()
                if end[0] != "char" or end[1] < item[1]:
                    self.fail("a bad range in a class")
                item = ("range", item[1], end[1])
            members.append(item)
        if not self.onig:
            return ("set", p[start:self.i], icase)
        if icase:
            for m in members:
                if m[0] != "char" or not m[1].isascii() or m[1] in "iI":
                    self.fail("(?i) with a class of more than ASCII letters other than i")
        return ("cls", negated, members)

    def class_item(self):
        c = self.p[self.i]
        self.i += 1
        if c != "\\":
            return ("char", c)
        if not self.onig and self.peek("b"):
            self.i += 1
            return ("char", "\b")
        kind, value = self.escape()
        if kind == "anchor":
            self.fail("an anchor inside a class")
        return ("char", value) if kind == "char" else ("text", value)

    def check_folds(self, nodes):
        """Oniguruma folds some letter pairs to one character ("ss" to "ß",
        "fi" to "ﬁ"); regex does not."""
        def letters(node):
            if node[0] == "char":
                return {node[1].lower()}
            if node[0] == "cls":
                return {m[1].lower() for m in node[2]}
            return set()

        for a, b in zip(nodes, nodes[1:]):
            if any(x + y in ("ss", "st", "ff", "fi", "fl") for x in letters(a) for y in letters(b)):
                self.fail("(?i) with a letter pair that Oniguruma folds to one character")


_MAX_CLASSES = 256  # an export scans every code point once per distinct class (a few ms each)


def _class_atoms(alts, found):
    """The distinct one-character atoms an export writes as code point ranges."""
    for seq in alts:
        for node in seq:
            while node[0] == "repeat":
                node = node[1]
            if node[0] == "set" or (node[0] == "char" and node[2]):
                found.add(node[1:])
            elif node[0] == "group":
                _class_atoms(node[2], found)
    return found


def _nullable(alts):
    return any(all(_node_nullable(n) for n in seq) for seq in alts)


def _node_nullable(node):
    kind = node[0]
    if kind == "anchor":
        return True
    if kind == "group":
        return node[1] in _LOOK or _nullable(node[2])
    if kind == "repeat":
        return node[2] == 0 or _node_nullable(node[1])
    return False


def _quantifier_text(low, high):
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _onig_char(c, in_class=False):
    if ((c.isascii() and (c.isalnum() or c == "_"))
            or (not c.isascii() and c.isalnum() and not in_class)):
        return c
    return f"\\x{{{ord(c):X}}}"


def _onig_ranges(ranges):
    if not ranges:
        raise ValueError("a class that matches no character")
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _onig_char(chr(ranges[0][0]))
    parts = []
    for a, b in ranges:
        parts.append(_onig_char(chr(a), True))
        if b > a:
            parts.append(("" if b == a + 1 else "-") + _onig_char(chr(b), True))
    return "[" + "".join(parts) + "]"


def _onig_text(alts, behind=False):
    return "|".join("".join(_onig_node(n, behind) for n in seq) for seq in alts)


def _onig_node(node, behind):
    kind = node[0]
    if kind == "char":
        if node[2]:
            return _onig_ranges(_char_ranges(f"(?i:{_regex_char(node[1])})"))
        return _onig_char(node[1])
    if kind == "set":
        return _onig_ranges(_char_ranges(f"(?i:{node[1]})" if node[2] else node[1]))
    if kind == "any":
        return "."
    if kind == "anchor":
        if behind and node[1] != "start":
            raise ValueError("an end-of-text anchor inside a look-behind (Oniguruma: "
                             "\"invalid pattern in look-behind\")")
        return {"start": r"\A", "end": r"\Z", "abs_end": r"\z"}[node[1]]
    if kind == "group":
        if behind:
            raise ValueError("a group inside a look-behind")
        prefix = {"group": "(?:", "icase": "(?:", "atomic": "(?>", "ahead": "(?=",
                  "not_ahead": "(?!", "behind": "(?<=", "not_behind": "(?<!"}[node[1]]
        return prefix + _onig_text(node[2], node[1] in ("behind", "not_behind")) + ")"
    _, inner, low, high, mode = node
    if behind and low != high:
        raise ValueError("a repeat of varying length inside a look-behind")
    if _onig_anchor_like(inner):
        raise ValueError("a repeated group with an alternative that is an anchor or a "
                         "look-around alone (Oniguruma: \"target of repeat operator is "
                         "invalid\")")
    atom, q = _onig_node(inner, behind), _quantifier_text(low, high)
    if mode == "possessive":
        return atom + q + "+" if q in ("*", "+", "?") else f"(?>{atom}{q})"
    if mode == "lazy" and low != high:
        return atom + q + "?"
    return atom + q


def _onig_anchor_like(node):
    """Whether Oniguruma refuses to repeat `node` as written for it: an anchor
    or a look-around, or a (?:...) group (which is no node of its own there)
    with an alternative that is one of these alone."""
    if node[0] == "anchor" or (node[0] == "group" and node[1] in _LOOK):
        return True
    if node[0] == "group" and node[1] in ("group", "icase"):
        return any(len(seq) == 1 and _onig_anchor_like(seq[0]) for seq in node[2])
    return False


def _regex_char(c, in_class=False):
    """`c` as a literal in `regex` syntax."""
    if c in ("\\]^-[" if in_class else ".^$*+?{}[]\\|()"):
        return "\\" + c
    if c.isprintable() and not (c.isspace() and c != " "):
        return c
    if c in "\n\r\t\f\v":
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f", "\v": "\\v"}[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _regex_text(alts):
    return "|".join("".join(_regex_node(n) for n in seq) for seq in alts)


def _regex_node(node):
    kind = node[0]
    if kind == "char":
        return _regex_char(node[1])
    if kind == "cls":
        parts = []
        for m in node[2]:
            if m[0] == "char":
                parts.append(_regex_char(m[1], True))
            elif m[0] == "range":
                parts.append(_regex_char(m[1], True) + "-" + _regex_char(m[2], True))
            else:
                parts.append(m[1])
        return "[" + ("^" if node[1] else "") + "".join(parts) + "]"
    if kind == "raw":
        return node[1]
    if kind == "any":
        return "."
    if kind == "anchor":
        # Oniguruma's ^ matches after every "\n" but one that ends the text
        return {"start": r"\A", "end": "$", "abs_end": r"\Z",
                "line_start": r"(?:\A|(?<=\n)(?!\Z))", "line_end": "(?m:$)"}[node[1]]
    if kind == "group":
        prefix = {"group": "(?:", "icase": "(?i:", "atomic": "(?>", "ahead": "(?=",
                  "not_ahead": "(?!", "behind": "(?<=", "not_behind": "(?<!"}[node[1]]
        return prefix + _regex_text(node[2]) + ")"
    _, inner, low, high, mode = node
    atom = _regex_node(inner)
    if inner[0] == "repeat":  # Oniguruma's x{n,m}+ and x{n}?: a repeat of a repeat
        atom = f"(?:{atom})"
    return atom + _quantifier_text(low, high) + {"greedy": "", "lazy": "?", "possessive": "+"}[mode]


def _pattern_to_onig(pattern):
    """`pattern` written for tokenizers' Oniguruma with the same meaning,
    after a comment that holds the pattern itself (base64), from which an
    import gets it back exactly; ValueError if this library cannot write it."""
    import base64

    body = _onig_body(pattern)
    b64 = base64.b64encode(pattern.encode("utf-8")).decode("ascii")
    return f"(?#bpe:{b64}){body}"


def _onig_body(pattern):
    out = _TO_ONIG.get(pattern)
    if out is None:
        try:
            if not pattern.isascii():
                try:
                    pattern.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError("it holds a lone surrogate") from None
            tree = _RegexReader(pattern, onig=False).parse()
            if _nullable(tree):
                raise ValueError("it can match the empty string")
            atoms = _class_atoms(tree, set())
            if len(atoms) > _MAX_CLASSES:
                raise ValueError(f"more than {_MAX_CLASSES} distinct character classes")
            out = _onig_text(tree)
        except RecursionError:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for Hugging Face "
                             "tokenizers: "
                             f"it nests too deeply") from None
        except ValueError as e:
            raise ValueError(f"cannot write the pattern {_short(pattern)} for Hugging Face "
                             "tokenizers "
                             f"(Oniguruma) so that it means the same: {e}") from None
        _TO_ONIG[pattern] = out
    return out


_ONIG_ORIGIN = _regex.compile(r"\(\?#bpe:([A-Za-z0-9+/=]*)\)")


def _pattern_from_onig(text):
    """A Split regex of a tokenizer.json as a `regex` pattern of the same
    meaning; ValueError if there is none this library can write.  What
    save_huggingface wrote comes back as the pattern it was written from."""
    import base64

    m = _ONIG_ORIGIN.match(text)
    if m:
        try:
            pattern = base64.b64decode(m.group(1), validate=True).decode("utf-8")
            _compile_pattern(pattern)
            if _onig_body(pattern) == text[m.end():]:
                return pattern
        except ValueError:
            pass  # edited since: read the regex itself
    try:
        try:
            tree = _RegexReader(text, onig=True).parse()
            if _nullable(tree):
                raise ValueError("it can match the empty string")
            pattern = _regex_text(tree)
            _compile_pattern(pattern)
        except RecursionError:
            raise ValueError("it nests too deeply") from None
    except ValueError as e:
        raise ValueError(f"the Split regex {_short(text)} cannot be read with the meaning it has "
                         f"in tokenizers: {e}") from None
    return pattern


# --------------------------------------------------------------------------
# Patterns for native scanners: what a compiled core needs to run a custom
# pattern in C (pattern_program, read with the regex reader above), and the
# spellings of GPT-4's pattern that cl100k's scanner serves (gpt4_variant)
# --------------------------------------------------------------------------


# GPT-4's pattern as other models and projects spell it: Llama 3's (cl100k's
# before tiktoken added `\s++$`), minbpe's, nanochat's (two digits), Qwen 2's
# and 3's (one digit).  The spellings of each part below match the same text,
# so every combination splits text as cl100k's pattern does, but for the
# longest run of digits and whether trailing white space is one pre-token.
_GPT4_PARTS = (
    (r"""'(?i:[sdmt]|ll|ve|re)""", r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)"""),
    (r"""[^\r\n\p{L}\p{N}]?+\p{L}++""", r"""[^\r\n\p{L}\p{N}]?+\p{L}+""",
     r"""[^\r\n\p{L}\p{N}]?\p{L}+"""),
    None,   # the digits: _GPT4_DIGITS
    (r""" ?[^\s\p{L}\p{N}]++[\r\n]*+""", r""" ?[^\s\p{L}\p{N}]++[\r\n]*""",
     r""" ?[^\s\p{L}\p{N}]+[\r\n]*"""),
    (r"""\s++$|""", ""),   # present: trailing white space is one pre-token
    (r"""\s*[\r\n]|\s+(?!\S)|\s""", r"""\s*[\r\n]|\s+(?!\S)|\s+""",
     r"""\s*[\r\n]+|\s+(?!\S)|\s+"""),
)
_GPT4_DIGITS = {r"\p{N}{1,3}+": 3, r"\p{N}{1,3}": 3, r"\p{N}{1,2}+": 2, r"\p{N}{1,2}": 2,
                r"\p{N}": 1}
_gpt4_spellings = None


def gpt4_variant(pattern):
    """(digits, trailing) where `pattern` is a spelling of GPT-4's pattern
    that splits text as cl100k's does but for the longest run of digits a
    pre-token takes (1, 2 or 3) and whether trailing white space is one
    pre-token (cl100k's `\\s++$`); else None.  Compiled cores scan these
    with cl100k's scanner.

    >>> gpt4_variant(PATTERNS["cl100k"])
    (3, True)
    >>> gpt4_variant(PATTERNS["gpt2"]) is None
    True
    """
    global _gpt4_spellings
    if type(pattern) is not str:
        return None
    if _gpt4_spellings is None:
        import itertools
        table = {}
        for digits, most in _GPT4_DIGITS.items():
            parts = [p if p is not None else (digits,) for p in _GPT4_PARTS]
            for a, b, c, d, end, ws in itertools.product(*parts):
                table["|".join((a, b, c, d, end + ws))] = (most, bool(end))
        _gpt4_spellings = table
    return _gpt4_spellings.get(pattern)


_PROGRAMS = {}
_MAX_PROGRAM_CLASSES = 64   # a native matcher keeps a class as one bit of a 64-bit mask
_MAX_PROGRAM_NODES = 512


def pattern_program(pattern):
    """A pattern of the GPT family as plain data, for a native matcher that
    gives ``regex.findall``'s matches; None for any other pattern (and for a
    Pipeline: its regexes split in turn).

    The family: alternation and groups (capturing or not, atomic,
    case-insensitive ``(?i:...)``); one-character atoms (literals, ``.``,
    class escapes such as ``\\s`` or ``\\p{L}`` and their negations, classes
    ``[...]`` and ``[^...]``, either case where ``(?i:`` says so) repeated by
    ``?``, ``*``, ``+`` or ``{m,n}`` (greedy, lazy or possessive); ``$``; and
    ``(?!C)`` for a one-character atom C (``(?!\\S)``).  A repeat of a group
    that can match the empty string repeats at most once (``?``); any
    other construct (a look-behind, another look-ahead, a back-reference,
    anchors but ``$``, flags) is outside.  The result, a dict:

    - ``"classes"``: for each distinct atom, the code points it matches as
      sorted inclusive ranges (found by ``regex`` itself: the tables agree);
    - ``"alternatives"``: a list of sequences, each a list of nodes:
      ``("class", k, low, high, mode)``: `low` to `high` (None: no bound)
      characters of class k; ``("group", alternatives, low, high, mode)``;
      ``("not_ahead", k)``: the next character is not in class k (or the
      text ends); ``("end",)``: ``$`` (the end, or before a final line
      feed).  `mode` is "greedy", "lazy" or "possessive".

    >>> p = pattern_program(r"\\p{N}{1,3}|\\s+(?!\\S)")
    >>> p["alternatives"]
    [[('class', 0, 1, 3, 'greedy')], [('class', 1, 1, None, 'greedy'), ('not_ahead', 2)]]
    >>> p["classes"][0][:2]
    [(48, 57), (178, 179)]
    >>> pattern_program(r"(?<=a)b") is None
    True
    """
    pattern = _check_pattern(pattern)  # a regex: names are the API's (resolve_pattern)
    if isinstance(pattern, Pipeline):
        return None  # several steps: the regexes split in turn
    if pattern in _PROGRAMS:
        return _PROGRAMS[pattern]
    atoms = {}   # atom text -> class number, then ranges -> the first class that has them

    def cls(node):
        if node[0] == "char":
            text = _regex_char(node[1])
            icase = node[2]
        elif node[0] == "set":
            text, icase = node[1], node[2]
        elif node[0] == "any":
            text, icase = ".", False
        else:
            return None
        text = f"(?i:{text})" if icase else text
        return atoms.setdefault(text, len(atoms))

    count = [0]

    def seq(nodes):
        out = []
        for node in nodes:
            low, high, mode = 1, 1, "greedy"
            if node[0] == "repeat":
                node, low, high, mode = node[1], node[2], node[3], node[4]
            count[0] += 1
            k = cls(node)
            if k is not None:
                out.append(("class", k, low, high, mode))
            elif node[0] == "anchor" and node[1] == "end":
                out.append(("end",))
            elif node[0] == "group" and node[1] == "not_ahead":
                inner = node[2]
                if len(inner) != 1 or len(inner[0]) != 1 or cls(inner[0][0]) is None:
                    return None
                out.append(("not_ahead", cls(inner[0][0])))
            elif node[0] == "group" and node[1] in ("group", "icase", "atomic"):
                alts = group(node[2])
                if alts is None or ((high is None or high > 1) and _nullable(node[2])):
                    return None
                if node[1] == "atomic":
                    alts = [[("group", alts, 1, 1, "possessive")]]
                out.append(("group", alts, low, high, mode))
            else:
                return None
        return out

    def group(alts):
        out = [seq(s) for s in alts]
        return None if None in out else out

    program = None
    try:
        tree = _RegexReader(pattern, onig=False).parse()
        alts = group(tree)
    except (ValueError, RecursionError):
        alts = None
    if alts is not None and len(atoms) <= _MAX_PROGRAM_CLASSES and count[0] <= _MAX_PROGRAM_NODES:
        program = {"classes": [_char_ranges(a) for a in atoms], "alternatives": alts}
    _PROGRAMS[pattern] = program
    return program


# --------------------------------------------------------------------------
# Hugging Face tokenizer.json; reading any format; the _FileFormats mixin
# --------------------------------------------------------------------------


_HF_FIELDS = frozenset(["version", "truncation", "padding", "added_tokens", "normalizer",
                        "pre_tokenizer", "post_processor", "decoder", "model"])
_HF_MODEL_FIELDS = frozenset(["type", "dropout", "unk_token", "continuing_subword_prefix",
                              "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
                              "vocab", "merges"])
_HF_ADDED_FIELDS = frozenset(["id", "content", "single_word", "lstrip", "rstrip", "normalized",
                              "special"])
_HF_BYTE_LEVEL_FIELDS = frozenset(["type", "add_prefix_space", "trim_offsets", "use_regex"])
_HF_SPLIT_FIELDS = frozenset(["type", "pattern", "behavior", "invert"])


def _hf_dump(tok):
    import json

    vocab = {token_to_str(t): i for i, t in sorted(tok._tokens.items())}
    for s in tok._specials:
        if s in vocab:
            raise ValueError(f"special token {_short(s)} has the same text as token {vocab[s]} in "
                             "the byte-level vocabulary; tokenizers would give it that id")
    # tokenizers numbers the added tokens itself: the k-th (in the file's order, by id) gets
    # the model's vocabulary size + k, whatever id the file gives it
    for k, (s, i) in enumerate(sorted(tok._specials.items(), key=lambda kv: kv[1])):
        if i != len(vocab) + k:
            raise ValueError(f"tokenizer.json cannot give special token {_short(s)} its id {i}: "
                             f"tokenizers numbers added tokens on from its vocabulary's size "
                             f"({len(vocab)} tokens), so it would be {len(vocab) + k}")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": False}
    pipeline = tok._pattern
    if not isinstance(pipeline, Pipeline):
        pipeline = Pipeline((), (pipeline,))
    pre = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": _pattern_to_onig(split)},
             "behavior": "Isolated", "invert": False}
            for split in pipeline.splits
        ] + [byte_level],
    }
    normalizer = [{"type": form} for form in pipeline.normalizers]
    if len(normalizer) > 1:
        normalizer = [{"type": "Sequence", "normalizers": normalizer}]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for s, i in sorted(tok._specials.items(), key=lambda kv: kv[1])
        ],
        "normalizer": normalizer[0] if normalizer else None,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": dict(byte_level),
        "model": {
            # ignore_merges: a pre-token that is itself a token is that token, as here
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": [[token_to_str(a), token_to_str(b)] for a, b in tok._merges],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=1)


def _hf_parse(text, where):
    """(pattern, tokens, merges, specials, ignore_merges) of a tokenizer.json."""
    c = _HfChecks(where)
    doc = _json(text, where)
    if not isinstance(doc, dict):
        c.fail(f"not a tokenizer.json: {_json_type(doc)}, not an object")
    model = doc.get("model")
    if not isinstance(model, dict):
        c.fail(f"not a tokenizer.json: 'model' must be an object, not {_json_type(model)}")
    c.check(doc, "", _HF_FIELDS)
    pattern = _hf_pipeline(doc, c)
    vocab, merges, ignore_merges = _hf_model(model, c)
    specials = _hf_added_tokens(doc.get("added_tokens"), vocab, merges, c)
    if isinstance(pattern, Pipeline) and pattern.normalizers:
        for k, entry in enumerate(doc.get("added_tokens") or []):
            if entry.get("normalized"):
                c.fail(f"added_tokens[{k}] ({_short(entry['content'])}) is matched in normalized "
                       f"text (normalized true), which is not supported")
    special_ids = set(specials.values())
    tokens = {}
    for s, i in vocab.items():
        if i in special_ids:
            continue
        try:
            tokens[i] = str_to_token(s)
        except ValueError as e:
            c.fail(f"model.vocab: {e}")
    return pattern, tokens, merges, specials, ignore_merges


class _HfChecks:
    """Checks of a tokenizer.json's fields; a ValueError names the file and the field."""

    def __init__(self, where):
        self.where = where

    def fail(self, what):
        raise ValueError(f"{self.where}: {what}")

    def check(self, obj, field, allowed):
        unknown = sorted(set(obj) - allowed)
        if unknown:
            self.fail(f"{field}{'.' if field else ''}{unknown[0]} is not a field this library "
                      f"knows; it might change the ids")

    def flag(self, obj, field, key):
        value = obj.get(key)
        if value is not None and not isinstance(value, bool):
            self.fail(f"{field}.{key} must be true or false, not {_short(value)}")
        return value


def _hf_pipeline(doc, c):
    """The pattern (a Pipeline where there is a normalizer or several
    splits); refuse what would change the ids around the model (truncation,
    padding, a normalizer other than Unicode's, a post-processor that adds or
    changes ids, a decoder other than ByteLevel)."""
    for key, effect in (("truncation", "cut"), ("padding", "pad")):
        if doc.get(key) is not None:
            c.fail(f"'{key}' is set: tokenizers would {effect} the ids, this library does not")
    forms = _hf_normalizers(doc.get("normalizer"), "normalizer", c)
    splits = _hf_splits(doc.get("pre_tokenizer"), c.fail)
    try:
        pattern = _check_pattern(Pipeline(forms, splits or [PATTERNS["bytes"]]))
    except ValueError as e:
        c.fail(f"pre_tokenizer: {e}")
    _hf_post_processor(doc.get("post_processor"), "post_processor", c)
    value = doc.get("decoder")
    if value is not None:
        if not isinstance(value, dict) or value.get("type") != "ByteLevel":
            c.fail(f"the decoder {_hf_kind(value)} is not supported (it would decode otherwise)")
        _hf_byte_level_flags(value, "decoder", c)
    return pattern


def _hf_byte_level_flags(value, field, c):
    c.check(value, field, _HF_BYTE_LEVEL_FIELDS)
    for name in ("add_prefix_space", "trim_offsets", "use_regex"):
        c.flag(value, field, name)


def _hf_post_processor(value, field, c):
    """Accept a post-processor that adds and changes no id, refuse any other:
    ByteLevel (it trims offsets only), a TemplateProcessing whose templates
    are `$A` and `$A $B` with no special token (type ids aside: transformers
    writes one on every save_pretrained), and a Sequence of these."""
    if value is None:
        return
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "ByteLevel":
        _hf_byte_level_flags(value, field, c)
    elif kind == "Sequence":
        c.check(value, field, frozenset(["type", "processors"]))
        steps = value.get("processors")
        if not isinstance(steps, list):
            c.fail(f"{field}.processors must be an array, not {_json_type(steps)}")
        for k, step in enumerate(steps):
            _hf_post_processor(step, f"{field}.processors[{k}]", c)
    elif kind == "TemplateProcessing":
        c.check(value, field, frozenset(["type", "single", "pair", "special_tokens"]))
        for key, want in (("single", ["A"]), ("pair", ["A", "B"])):
            pieces = value.get(key)
            if not isinstance(pieces, list) or [_hf_template_part(p) for p in pieces] != want:
                c.fail(f"{field}: a TemplateProcessing whose {key} template is not "
                       f"{' '.join('$' + x for x in want)} is not supported (it would add or move "
                       f"ids)")
        if not isinstance(value.get("special_tokens", {}), dict):
            c.fail(f"{field}.special_tokens must be an object, not "
                   f"{_json_type(value['special_tokens'])}")
    else:
        c.fail(f"the {field} {_hf_kind(value)} is not supported (it would add or change ids)")


def _hf_template_part(part):
    """"A" or "B" for a template's {"Sequence": {"id": "A", "type_id": n}}, else None."""
    if not (isinstance(part, dict) and list(part) == ["Sequence"]
            and isinstance(part["Sequence"], dict)):
        return None
    sequence = part["Sequence"]
    type_id = sequence.get("type_id", 0)
    if (set(sequence) <= {"id", "type_id"} and isinstance(type_id, int)
            and not isinstance(type_id, bool) and sequence.get("id") in ("A", "B")):
        return sequence["id"]
    return None


def _hf_model(model, c):
    """(vocab, merges, ignore_merges) of the model: a plain byte-level BPE."""
    c.check(model, "model", _HF_MODEL_FIELDS)
    if model.get("type", "BPE") != "BPE":
        c.fail(f"model.type {_short(model.get('type'))} is not BPE")
    dropout = model.get("dropout")
    if dropout is not None:
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
            c.fail(f"model.dropout must be a number or null, not {_short(dropout)}")
        if dropout != 0:
            c.fail(f"model.dropout = {dropout}: tokenizers would drop merges at random")
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        value = model.get(key)
        if value is not None and not isinstance(value, str):
            c.fail(f"model.{key} must be a string or null, not {_short(value)}")
        if key != "unk_token" and value:
            c.fail(f"model.{key} = {_short(value)} is not supported (byte-level BPE has no "
                   f"subword marks)")
    # unk_token, fuse_unk and byte_fallback act only on a character missing
    # from the vocabulary: a byte-level one has all 256 (checked when built)
    for key in ("fuse_unk", "byte_fallback"):
        c.flag(model, "model", key)
    ignore_merges = bool(c.flag(model, "model", "ignore_merges"))
    vocab = _json_ids(model.get("vocab"), c.where, "model.vocab")
    raw_merges = model.get("merges", [])
    if not isinstance(raw_merges, list):
        c.fail(f"model.merges must be an array, not {_json_type(raw_merges)}")
    merges = []
    for k, m in enumerate(raw_merges):
        if isinstance(m, str):
            m = m.split(" ")
        if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)):
            c.fail(f"model.merges[{k}] is not a pair of tokens: {_short(m)}")
        try:
            merges.append((str_to_token(m[0]), str_to_token(m[1])))
        except ValueError as e:
            c.fail(f"model.merges[{k}]: {e}")
    return vocab, merges, ignore_merges


def _hf_added_tokens(added, vocab, merges, c):
    """The added tokens, which are the special tokens: str -> the id
    tokenizers gives it, whatever id the file writes: a token of model.vocab
    keeps its vocabulary id, the others are numbered from the vocabulary's
    size on, in file order.  What tokenizers would match or number otherwise
    than this library can is refused, naming the field: lstrip, rstrip,
    single_word; a normalized token that can overlap a non-normalized one
    (tokenizers matches those first, then the normalized ones in what is
    left); an added token that is a byte or a merged token of the
    vocabulary, or whose number is a vocabulary token's id."""
    if added is None:
        added = []
    if not isinstance(added, list):
        c.fail(f"added_tokens must be an array, not {_json_type(added)}")
    specials, fields, normalized = {}, {}, []
    vocab_ids = {i: s for s, i in vocab.items()}
    merged = {a + b for a, b in merges}
    numbered = 0
    for k, entry in enumerate(added):
        field = f"added_tokens[{k}]"
        if not isinstance(entry, dict):
            c.fail(f"{field} must be an object, not {_json_type(entry)}")
        c.check(entry, field, _HF_ADDED_FIELDS)
        content, i = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not content:
            c.fail(f"{field}.content must be a non-empty string, not {_short(content)}")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
            c.fail(f"{field}.id must be an int in [0, 2**31), not {_short(i)}")
        for key in ("single_word", "lstrip", "rstrip", "normalized", "special"):
            if c.flag(entry, field, key) and key in ("single_word", "lstrip", "rstrip"):
                c.fail(f"{field}.{key} ({_short(content)}): true is not supported (tokenizers "
                       f"would {_HF_STRIPS[key]})")
        try:
            _check_special_text(content)
        except ValueError as e:
            c.fail(f"{field}: {e}")
        if content in specials:
            c.fail(f"{field}: {_short(content)} is added twice")
        if content in vocab:
            i = vocab[content]
            try:
                t = str_to_token(content)
            except ValueError:
                t = None
            if t != content.encode("utf-8"):
                c.fail(f"{field}.content {_short(content)} is the model.vocab entry of id {i}, "
                       f"whose bytes are {_short(t)}: tokenizers gives the text "
                       f"{_short(content)} that id; not supported")
            if len(t) == 1 or t in merged:
                c.fail(f"{field}.content {_short(content)} is token {i} of model.vocab, " +
                       ("a byte" if len(t) == 1 else "which a merge makes") +
                       ": tokenizers matches it whole in text as an added token with that id; "
                       "not supported")
        else:
            i = len(vocab) + numbered
            numbered += 1
            if i in vocab_ids or i >= _MAX_ID:
                c.fail(f"{field}.id: tokenizers numbers the added tokens that are not in "
                       f"model.vocab from its size ({len(vocab)}) on, in file order, which gives "
                       f"{_short(content)} id {i}" +
                       (f", the id of model.vocab's {_short(vocab_ids[i])}" if i in vocab_ids
                        else "") + "; not supported")
        specials[content] = i
        fields[content] = field
        if entry.get("normalized"):
            normalized.append(content)
    plain = [s for s in specials if s not in normalized]
    pair = _overlapping(plain, normalized)
    if pair is not None:
        a, b = pair
        c.fail(f"{fields[b]}.normalized: {_short(b)} is matched in what is left once the "
               f"non-normalized added tokens are, and it can overlap {_short(a)} ({fields[a]}), "
               f"so tokenizers would match them otherwise than in one pass; not supported")
    return specials


_HF_STRIPS = {"lstrip": "take the whitespace before it into the token",
              "rstrip": "take the whitespace after it into the token",
              "single_word": "match it only between non-word characters"}


def _overlapping(first, second):
    """(a, b), a of `first` and b of `second` whose occurrences can overlap
    in some text (one holds the other, or one ends as the other begins), or
    None."""
    if not first or not second:
        return None
    for xs, ys, flip in ((first, second, False), (second, first, True)):
        inside = _regex.compile("|".join(_regex.escape(x) for x in sorted(xs, key=len,
                                                                        reverse=True)))
        starts = {}
        for y in ys:
            m = inside.search(y)
            if m:
                return (y, m.group()) if flip else (m.group(), y)
            for n in range(1, len(y)):
                starts.setdefault(y[:n], y)
        for x in xs:
            for n in range(1, len(x)):
                y = starts.get(x[-n:])
                if y is not None:
                    return (y, x) if flip else (x, y)
    return None


def _hf_kind(value):
    if isinstance(value, dict):
        return _short(value.get("type"))
    return f"({_json_type(value)})"


def _hf_normalizers(value, field, c):
    """The Unicode normalization forms of a normalizer, in the order applied."""
    if value is None:
        return []
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in _NORMALIZERS:
        c.check(value, field, frozenset(["type"]))
        return [kind]
    if kind == "Sequence":
        c.check(value, field, frozenset(["type", "normalizers"]))
        steps = value.get("normalizers")
        if not isinstance(steps, list):
            c.fail(f"{field}.normalizers must be an array, not {_json_type(steps)}")
        return [form for k, step in enumerate(steps)
                for form in _hf_normalizers(step, f"{field}.normalizers[{k}]", c)]
    c.fail(f"the {field} {_hf_kind(value)} is not supported (only {', '.join(_NORMALIZERS)} and "
           f"a Sequence of them)")


_HF_PRE_WANT = ("a ByteLevel pre-tokenizer, after any Splits and Digits of a Sequence")


def _hf_steps(pre, field, fail):
    """The steps of a pre-tokenizer, a Sequence's flattened: [(field, step)]."""
    if not isinstance(pre, dict):
        fail(f"{field} must be {_HF_PRE_WANT}, not {_json_type(pre)}")
    if pre.get("type") != "Sequence":
        return [(field, pre)]
    steps = pre.get("pretokenizers")
    if not isinstance(steps, list):
        fail(f"{field}.pretokenizers must be an array, not {_json_type(steps)}")
    return [x for k, step in enumerate(steps)
            for x in _hf_steps(step, f"{field}.pretokenizers[{k}]", fail)]


def _hf_splits(pre, fail):
    """The regexes a pre-tokenizer splits by, in order: its Splits and Digits,
    then GPT-2's pattern for a ByteLevel with use_regex (the last step; its
    byte-to-character map is what the vocabulary is written in)."""
    steps = _hf_steps(pre, "pre_tokenizer", fail)
    if not steps or steps[-1][1].get("type") != "ByteLevel":
        fail(f"the pre_tokenizer must end with a ByteLevel (want {_HF_PRE_WANT})")
    splits = []
    for field, step in steps[:-1]:
        kind = step.get("type")
        if kind == "Split":
            splits.append(_hf_split(step, field, fail))
        elif kind == "Digits":
            unknown = sorted(set(step) - {"type", "individual_digits"})
            if unknown:
                fail(f"{field}.{unknown[0]} is not a field this library knows; it might change "
                     f"the ids")
            individual = step.get("individual_digits", False)
            if not isinstance(individual, bool):
                fail(f"{field}.individual_digits must be true or false, not {_short(individual)}")
            splits.append(r"\p{N}" if individual else r"\p{N}+")
        else:
            fail(f"{field}: the pre-tokenizer {_short(kind)} is not supported (want "
                 f"{_HF_PRE_WANT})")
    if _hf_byte_level(steps[-1][1], steps[-1][0], fail):
        splits.append(PATTERNS["gpt2"])
    return splits


def _hf_byte_level(pre, field, fail):
    """use_regex of a ByteLevel pre-tokenizer (add_prefix_space refused)."""
    unknown = sorted(set(pre) - _HF_BYTE_LEVEL_FIELDS)
    if unknown:
        fail(f"{field}.{unknown[0]} is not a field this library knows; it might change the ids")
    for key in ("add_prefix_space", "trim_offsets", "use_regex"):
        value = pre.get(key)
        if value is not None and not isinstance(value, bool):
            fail(f"{field}.{key} must be true or false, not {_short(value)}")
    if pre.get("add_prefix_space"):
        fail(f"{field}: ByteLevel with add_prefix_space=true is not supported")
    return pre.get("use_regex", True) is not False


def _hf_split(split, field, fail):
    unknown = sorted(set(split) - _HF_SPLIT_FIELDS)
    if unknown:
        fail(f"{field}.{unknown[0]} is not a field this library knows; it might change the ids")
    if split.get("behavior") != "Isolated" or split.get("invert") not in (False, None):
        fail(f"{field}: only a Split with behavior Isolated and invert false is supported, not "
             f"{_short(split.get('behavior'))} / invert {_short(split.get('invert'))}")
    pat = split.get("pattern")
    if not (isinstance(pat, dict) and len(pat) == 1 and next(iter(pat)) in ("Regex", "String")
            and isinstance(next(iter(pat.values())), str)):
        fail(f"{field}.pattern must be {{\"Regex\": string}} or {{\"String\": string}}, not "
             f"{_short(pat)}")
    if "String" in pat:
        if not pat["String"]:
            fail(f"{field}.pattern: an empty String matches nothing")
        return _regex.escape(pat["String"])
    try:
        return _pattern_from_onig(pat["Regex"])
    except ValueError as e:
        fail(f"{field}.pattern: {e}")


def _hf_tokenizer(cls, text, where, configs=()):
    """from_huggingface's tokenizer, from the text of a tokenizer.json (and
    the configs beside it: see _hf_config_specials)."""
    pattern, tokens, merges, specials, ignore_merges = _hf_parse(text, where)
    if configs:
        specials = _hf_config_specials(configs, tokens, specials)
    tok = cls._create(pattern, tokens, merges, specials)
    if not ignore_merges:
        _check_merges_rebuild(tok, where)
    return tok


_HF_ROLES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
             "mask_token")


def _hf_configs(directory):
    """[(doc, where)] of a model directory's tokenizer_config.json and
    special_tokens_map.json (those present), which transformers reads beside
    its tokenizer.json."""
    configs = []
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        where = _os.path.join(directory, name)
        if _os.path.lexists(where):
            doc = _json(_read_text(where), where)
            if not isinstance(doc, dict):
                raise ValueError(f"{where}: not a JSON object but a {_json_type(doc)}")
            configs.append((doc, where))
    return configs


def _hf_config_specials(configs, tokens, specials):
    """The special tokens transformers has once it has read the configs: the
    tokenizer.json's, then each token the configs name (added_tokens_decoder,
    bos_token, ..., additional_special_tokens) that it lacks, which
    transformers adds as an added token at the next id (whatever id the
    config gives it), matched whole in text as a special token is here.  What
    changes ids otherwise (split_special_tokens, stripping flags, lower case,
    a prefix space, a vocabulary token made an added one) is a ValueError
    naming the field."""
    specials = dict(specials)
    words = {token_to_str(t) for t in tokens.values()}
    order = []

    def fail(where, field, what):
        raise ValueError(f"{where}: {field}: {what}; not supported")

    def add(content, where, field, adds=True):
        if isinstance(content, dict):
            for flag in ("lstrip", "rstrip", "single_word"):
                if content.get(flag) is True:
                    fail(where, f"{field}.{flag}", "true (transformers strips or checks the "
                         "text around the token)")
            content = content.get("content")
        if content is None:
            return
        if not isinstance(content, str) or not content:
            fail(where, field, f"{_short(content)} is not a token's text")
        if content in specials or content in order:
            return
        if content in words:
            fail(where, field, f"{_short(content)} is a token of the vocabulary, which "
                 "transformers would match whole in any text, as an added token")
        if not adds:
            fail(where, field, f"{_short(content)} is not in tokenizer.json (transformers "
                 "versions differ on whether this file adds it)")
        order.append(content)

    for doc, where in configs:
        adds = _os.path.basename(where) == "tokenizer_config.json"
        if doc.get("split_special_tokens") is True:
            fail(where, "split_special_tokens", "true (transformers encodes the special tokens' "
                 "text as ordinary text; here that is encode(text, disallowed_special=()))")
        if doc.get("do_lower_case") is True:
            fail(where, "do_lower_case", "true")
        if doc.get("add_prefix_space") is True and doc.get("tokenizer_class") not in (
                None, "PreTrainedTokenizerFast"):
            fail(where, "add_prefix_space", f"true for {_short(doc.get('tokenizer_class'))}")
        decoder = doc.get("added_tokens_decoder", {})
        if not isinstance(decoder, dict):
            fail(where, "added_tokens_decoder", "not a JSON object")
        for key, entry in sorted(decoder.items(), key=lambda kv: (not _is_id(kv[0]),
                                                                   len(kv[0]), kv[0])):
            if not isinstance(entry, dict):
                fail(where, f"added_tokens_decoder.{key}", "not a JSON object")
            add(entry, where, f"added_tokens_decoder.{key}")
        for role in _HF_ROLES:
            add(doc.get(role), where, role, adds)
        lists = {}  # transformers 5 reads extra_special_tokens (and then not the other)
        for field in ("extra_special_tokens", "additional_special_tokens"):
            extra = doc.get(field, [])
            lists[field] = list(extra.values()) if isinstance(extra, dict) else extra
            if not isinstance(lists[field], list):
                fail(where, field, "not a JSON list")
        chosen, other = ("extra_special_tokens", "additional_special_tokens")[
            ::1 if lists["extra_special_tokens"] else -1]
        names = {e.get("content") if isinstance(e, dict) else e for e in lists[chosen]}
        for e in lists[other]:
            if (e.get("content") if isinstance(e, dict) else e) not in names | specials.keys():
                fail(where, other, f"{_short(e)} is in neither tokenizer.json nor {chosen} "
                     "(transformers versions read one or the other)")
        for k, entry in enumerate(lists[chosen]):
            add(entry, where, f"{chosen}[{k}]", adds)
    next_id = len(tokens) + len(specials)  # transformers: its vocabulary's size on
    taken = set(tokens) | set(specials.values())
    for content in order:
        if next_id in taken:
            raise ValueError(f"{configs[0][1]}: transformers would give the added token "
                             f"{_short(content)} id {next_id}, which another token has; "
                             "not supported")
        specials[content] = next_id
        next_id += 1
    return specials


def _check_merges_rebuild(tok, where):
    """With ignore_merges false, tokenizers encodes a pre-token by its merges
    only, this library (as tiktoken, and tokenizers with ignore_merges true)
    takes a pre-token that is itself a token as that token: the same ids
    exactly when every token's own merges rebuild it."""
    found = _unrebuilt_token(tok)
    if found is not None:
        i, t, ids = found
        raise ValueError(f"{where}: with model.ignore_merges false, tokenizers never gives "
                         f"token {_short(t)} (id {i}) for its own text (its merges make "
                         f"{_short(ids)}), and this library would; not supported")


def _unrebuilt_token(tok):
    """(id, bytes, ids) of the first token (by id) that merges alone, by rank
    (GPT-2's rule: no whole-token rule), do not rebuild from its bytes, or
    None.  A token whose bytes are not UTF-8 is never a whole pre-token, a
    single byte always rebuilds."""
    for i, t in sorted(tok._tokens.items()):
        if len(t) < 2:
            continue
        try:
            t.decode("utf-8")
        except UnicodeDecodeError:
            continue
        ids = tok._core.merge_bytes(t)
        if ids != [i]:
            return i, t, ids
    return None


def _check_tiktoken_exact(tok):
    """tiktoken keeps ranks only and rebuilds the merges from them (a token
    is the join of the two pieces that byte-pair encoding with the lower
    ranks leaves; ids are ranks): the export is exact when the merges it
    rebuilds from this tokenizer's ids are this tokenizer's merges, in
    order.  Else a ValueError naming the first token it cannot express."""
    _check_rank_order(tok)
    ranks = {t: i for i, t in tok._tokens.items()}
    what = "tiktoken's format (ranks only) cannot express this tokenizer"
    try:
        derived = _rebuilt_merges(tok, ranks)
    except ValueError as e:
        raise ValueError(f"{what}: {str(e).split(': ', 1)[-1]}") from None
    if derived == tok._merges:
        return
    ours = {a + b: (a, b) for a, b in tok._merges}
    theirs = {a + b: (a, b) for a, b in derived}
    for i, t in sorted(tok._tokens.items()):
        if ours.get(t) != theirs.get(t):
            mine, other = ours.get(t), theirs.get(t)
            raise ValueError(
                f"{what}: token {_short(t)} (id {i}) " +
                (f"is made by merging {_short(mine[0])} and {_short(mine[1])} here"
                 if mine else "is made by no merge here") + ", but tiktoken would " +
                (f"merge {_short(other[0])} and {_short(other[1])} into it" if other
                 else "never build it by a merge"))
    raise ValueError(f"{what}: its merges are not in the order of their ids")  # pragma: no cover


def _rebuilt_merges(tok, ranks):
    """The merges (pairs of bytes, by rank) that tiktoken's rule implies for
    `ranks`: read by the core's C reader where it has one, else by
    _tiktoken_model."""
    core_class = type(tok._core)
    model = core_class.tiktoken_model(ranks)
    if model is not None:
        core = core_class.from_model(tok._pattern, model, {})
        tokens = core.tokens()
        return [(tokens[a], tokens[b]) for a, b, _ in core.merges()]
    return _tiktoken_model(ranks, "this tokenizer")[1]


# Reading any format (Tokenizer.from_file)

def _read_sidecar(path, digest):
    """(pattern, special tokens) from the sidecar beside a .tiktoken file
    (`path`.json, as save_tiktoken writes it), or None where there is none.
    Anything else, or a sidecar written for another file (its sha256 is not
    `digest`, the .tiktoken file's), is a ValueError naming it."""
    side = path + ".json"
    if not _os.path.lexists(side):
        return None
    meta = _json(_read_text(side), side)

    def fail(what):
        return ValueError(f"{side}: {what}; the sidecar of {path} is what save_tiktoken writes: "
                          f'{{"pattern": str, "special_tokens": {{str: id}}, "sha256": '
                          f"the sha256 of {_os.path.basename(path)}}}")

    if not isinstance(meta, dict):
        raise fail(f"a JSON {_json_type(meta)}, not an object")
    pattern, specials = meta.get("pattern"), meta.get("special_tokens", {})
    if not isinstance(pattern, str):
        raise fail(f'"pattern" is {_short(pattern)}, not a string')
    if not isinstance(specials, dict):
        raise fail(f'"special_tokens" is a JSON {_json_type(specials)}, not an object')
    try:
        _compile_pattern(pattern)  # a regex: names are resolved only for pattern=
        for name, i in specials.items():
            _check_special_text(name)
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < _MAX_ID:
                raise ValueError(f"the id of special token {_short(name)} must be an int in "
                                 f"[0, 2**31), not {_short(i)}")
    except ValueError as e:
        raise ValueError(f"{side}: {e}") from None
    if "sha256" in meta:
        sha = meta["sha256"]
        if not (isinstance(sha, str) and len(sha) == 64
                and all(c in "0123456789abcdef" for c in sha.lower())):
            raise fail(f'"sha256" is {_short(sha)}, not 64 hex digits')
        if sha.lower() != digest:
            raise ValueError(f"{side}: the sidecar of another file: it gives sha256 {sha[:16]}..., "
                             f"{path} has sha256 {digest[:16]}... (a save cut short between the "
                             f"two files?); save the tokenizer again, or give its pattern and "
                             f"special tokens to Tokenizer.from_tiktoken")
    return pattern, specials


def _load_any(cls, path, pattern, special_tokens=None):
    import hashlib

    def holds_pattern(what):
        if pattern is not None:
            raise ValueError(f"{path}: {what} holds its own pattern; do not give one")
        if special_tokens is not None:
            raise ValueError(f"{path}: {what} holds its own special tokens; do not give them")

    if _os.path.isdir(path):
        hf = _os.path.join(path, "tokenizer.json")
        if _os.path.lexists(hf):  # a FIFO or a device there is refused, not skipped
            holds_pattern("tokenizer.json")
            if not _os.path.isfile(hf):
                return cls.from_huggingface(hf)  # refused, naming what it is
            return cls.from_huggingface(path)  # the directory, as transformers reads it
        vocab, merges = _os.path.join(path, "vocab.json"), _os.path.join(path, "merges.txt")
        if _os.path.lexists(vocab) and _os.path.lexists(merges):
            return cls.from_gpt2(vocab, merges, pattern=pattern or "gpt2",
                                 special_tokens=special_tokens)
        raise ValueError(f"{path} is a directory without tokenizer.json, or vocab.json and "
                         "merges.txt")
    data = _read_file(path)  # a regular file, checked before its first byte is read
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(_NATIVE_MAGIC.encode()):
        holds_pattern("the native format")
        return cls._from_native_text(_text_of(data, path), path)
    if head.startswith(b"{"):
        holds_pattern("tokenizer.json")
        return _hf_tokenizer(cls, _text_of(data, path), path)
    # a .tiktoken file: its pattern and special tokens come from its sidecar, from
    # pattern=, or from the encoding whose file it is; never from a guess
    if pattern is not None:
        pattern = resolve_pattern(pattern)
    digest = hashlib.sha256(data).hexdigest()
    side = _read_sidecar(path, digest)
    specials = special_tokens
    if side is not None:
        specials = side[1] if specials is None else specials
        pattern = side[0] if pattern is None else pattern
    elif digest in _KNOWN_RANKS:
        known, named, _ = _ENCODINGS[_KNOWN_RANKS[digest]]
        pattern = PATTERNS[known] if pattern is None else pattern
        specials = dict(named) if specials is None else specials
    elif pattern is None:
        raise ValueError(
            f"{path}: a .tiktoken file holds neither its pattern nor its special tokens, and "
            f"this one has no sidecar ({_os.path.basename(path)}.json, which save_tiktoken "
            f"writes) and is none of OpenAI's files: pass pattern= (bpe encode: --pattern), or "
            f"load it with Tokenizer.from_tiktoken(path, pattern=..., special_tokens=...)")
    return cls._from_ranks(pattern, _text_of(data, path), path, specials)


# The file formats as Tokenizer methods

class _FileFormats:
    """Reading and writing the files of GPT-2, tiktoken and Hugging Face."""

    @classmethod
    def from_gpt2(cls, vocab_json, merges_txt, *, special_tokens=None, pattern="gpt2"):
        """Read GPT-2's vocab.json and merges.txt, keeping their ids.

        The two must belong together: every vocab.json entry is a single
        byte, the result of a merge, or a special token.  With
        ``special_tokens=None`` the entries no merge makes are the special
        tokens: for a pair save_gpt2 wrote, all of them (merges.txt's first
        line holds a fingerprint of the pair, checked here); for other files,
        each must look like a special token (``<...>`` or ``[...]``, such as
        GPT-2's ``<|endoftext|>``) or be no join of two other entries -- one
        that is, is a token whose merge line is missing (merges.txt cut short
        or from another vocabulary): ValueError.  `special_tokens`: a list of
        names (their vocab.json ids, or new ids after the largest), or a dict
        name -> id; they must cover every entry no merge makes."""
        pattern = resolve_pattern(pattern)
        return cls._create(pattern, *_gpt2_parse(_read_text(vocab_json), _read_text(merges_txt),
                                                 special_tokens, vocab_json, merges_txt))

    def save_gpt2(self, directory):
        """Write directory/vocab.json and directory/merges.txt, each
        atomically; merges.txt's first line (``#version: 0.2 bpe-pair:...``,
        which other readers skip) holds a fingerprint of both files, so that
        a vocab.json beside a merges.txt of another save is refused on load."""
        _one_name_per_id(self, "GPT-2's vocab.json")
        vocab, merges = _gpt2_dump(self)
        _os.makedirs(directory, exist_ok=True)
        with FileSet() as files:
            files.text(_os.path.join(directory, "vocab.json"), vocab)
            files.text(_os.path.join(directory, "merges.txt"), merges)
            files.publish()

    @classmethod
    def from_tiktoken(cls, path_or_ranks, *, pattern, special_tokens=None):
        """Read a .tiktoken file (or a dict bytes -> rank); ranks become ids
        and the merges are recovered from the ranks.  `special_tokens`: a
        dict str -> id, or names that take the ids after the largest rank."""
        pattern = resolve_pattern(pattern)
        if isinstance(path_or_ranks, _abc.Mapping):
            return cls._from_ranks(pattern, dict(path_or_ranks), "ranks", special_tokens)
        return cls._from_ranks(pattern, _read_text(path_or_ranks), path_or_ranks, special_tokens)

    @classmethod
    def _from_ranks(cls, pattern, ranks, where, special_tokens):
        """from_tiktoken of ranks: a dict bytes -> rank, or a .tiktoken file's
        text (read by the core's C reader when it takes it, see CoreProtocol)."""
        if special_tokens is None:
            special_tokens = {}
        model = cls.core_class.tiktoken_model(ranks)
        if model is not None:
            tok = cls._from_model(pattern, model, special_tokens)
            if tok is not None:
                return tok
        if isinstance(ranks, str):
            ranks = _tiktoken_parse(ranks, where)
        tokens, merges = _tiktoken_model(ranks, where)
        return cls._with_specials(pattern, tokens, merges, special_tokens)

    def save_tiktoken(self, path, *, sidecar=True):
        """Write tiktoken's format: one ``base64(token) id`` line per token.
        A .tiktoken file holds neither the pattern nor the special tokens:
        they, and the file's sha256 (for tiktoken's ``load_tiktoken_bpe(path,
        expected_hash=...)``; tiktoken caches files by path), go to the sidecar
        ``<path>.json`` (unless ``sidecar=False``) and are returned.

        >>> import json, os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> path = os.path.join(tempfile.mkdtemp(), "tok.tiktoken")
        >>> meta = tok.save_tiktoken(path)
        >>> sorted(meta), meta["special_tokens"]
        (['pattern', 'sha256', 'special_tokens'], {'<s>': 257})
        >>> json.load(open(path + ".json", encoding="utf-8")) == meta
        True
        >>> Tokenizer.from_tiktoken(path, pattern=meta["pattern"],
        ...                         special_tokens=meta["special_tokens"]) == tok
        True
        """
        import hashlib
        import json

        text = _tiktoken_dump(self)
        _tiktoken_pattern(self._pattern)  # one tiktoken can be given, or refused before writing
        meta = {"pattern": self._pattern, "special_tokens": self.special_tokens,
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
        with FileSet() as files:  # the file and its sidecar as a set
            files.text(path, text)
            if sidecar:
                files.text(_os.fspath(path) + ".json",
                           json.dumps(meta, ensure_ascii=False, indent=1) + "\n", describes=True)
            files.publish()
        return meta

    def to_tiktoken(self, name="bpe"):
        """A ``tiktoken.Encoding`` with the same ids (needs tiktoken)."""
        try:
            import tiktoken
        except ImportError:
            raise ImportError("to_tiktoken needs tiktoken: pip install tiktoken") from None
        _check_tiktoken_exact(self)
        for a in self._specials:
            for b in self._specials:
                if a != b and b.startswith(a):
                    raise ValueError(f"special tokens {a!r} and {b!r} start alike; tiktoken does "
                                     "not "
                                     f"match them longest first, so it would encode differently")
        pat_str = _tiktoken_pattern(self._pattern)
        try:
            enc = tiktoken.Encoding(name=name, pat_str=pat_str,
                                    mergeable_ranks={t: i for i, t in self._tokens.items()},
                                    special_tokens=dict(self._specials))
        except ValueError as e:
            raise ValueError(f"tiktoken's regex engine refuses the pattern {_short(pat_str)} "
                             f"(written for it from {_short(self._pattern)}): "
                             f"{_short(str(e))}") from None
        return _tiktoken_checked(self, enc)

    def save_huggingface(self, path):
        """Write a tokenizer.json that Hugging Face ``tokenizers`` loads and
        encodes to the same ids.  The pattern is written for its regex engine
        (Oniguruma): classes and Unicode properties as the explicit code
        point ranges this library matches, possessive repeats as atomic
        groups; a pattern that cannot be written with the same meaning (a
        back-reference, \\b, a pattern that can match the empty string, ...) is
        a ValueError."""
        _one_name_per_id(self, "a tokenizer.json")
        _atomic_write(path, _hf_dump(self))

    @classmethod
    def from_huggingface(cls, path):
        """Read a byte-level BPE tokenizer.json (what save_huggingface writes,
        GPT-2's, or a Split-regex + ByteLevel pre-tokenizer), or the
        tokenizer.json of a directory (what save_pretrained writes); anything
        this library cannot reproduce exactly raises ValueError saying what: a
        normalizer, a post-processor or decoder other than ByteLevel,
        truncation, padding, dropout, subword prefixes or suffixes, unknown
        fields, a Split regex whose meaning differs between the engines, and,
        with ``ignore_merges: false``, a token its own merges do not rebuild.
        A directory is read as transformers reads it: the tokens its
        tokenizer_config.json names that tokenizer.json lacks become special
        tokens at the ids transformers gives them; what would change ids
        otherwise (``split_special_tokens: true``, stripping flags, ...) raises
        ValueError naming the field."""
        configs = ()
        if _os.path.isdir(path):
            configs = _hf_configs(path)  # transformers' view of the directory's tokenizer
            path = _os.path.join(path, "tokenizer.json")
            if not _os.path.isfile(path):
                raise ValueError(f"{_os.path.dirname(path)}: a directory without a tokenizer.json "
                                 f"(not a regular file)")
        return _hf_tokenizer(cls, _read_text(path), path, configs)

    def save_pretrained(self, directory, *, bos_token=None, eos_token=None, pad_token=None,
                        unk_token=None, model_max_length=None):
        """Write what a model repository holds for its tokenizer:
        tokenizer.json (see save_huggingface), tokenizer_config.json and
        special_tokens_map.json, so that
        ``transformers.AutoTokenizer.from_pretrained(directory)`` gives a fast
        tokenizer with these ids.  The roles (`bos_token`, ...) name special
        tokens of this tokenizer; `model_max_length` is where
        ``truncation=True`` cuts.  No token is added around a text (no
        template): transformers gives ``encode(text, allowed_special="all")``.

        >>> import os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<|endoftext|>", "<pad>"])
        >>> directory = tempfile.mkdtemp()
        >>> tok.save_pretrained(directory, eos_token="<|endoftext|>", pad_token="<pad>")
        >>> sorted(os.listdir(directory))
        ['special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']
        >>> Tokenizer.from_huggingface(directory) == tok
        True
        """
        import json

        roles = {}
        for role, value in (("bos_token", bos_token), ("eos_token", eos_token),
                            ("pad_token", pad_token), ("unk_token", unk_token)):
            if value is None:
                continue
            if not isinstance(value, str):
                raise TypeError(f"{role} must be a str or None, not {type(value).__name__}")
            if value not in self._specials:
                raise ValueError(f"{role} {value!r} is not a special token of this tokenizer "
                                 f"(its special tokens: {sorted(self._specials)!r})")
            roles[role] = value
        if model_max_length is not None:
            _check_int("model_max_length", model_max_length, 1)
        _one_name_per_id(self, "a tokenizer.json")
        tokenizer_json = _hf_dump(self)
        config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            **roles,
            "clean_up_tokenization_spaces": False,
            "padding_side": "right",
            "truncation_side": "right",
            "added_tokens_decoder": {
                str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                         "single_word": False, "special": True}
                for s, i in sorted(self._specials.items(), key=lambda kv: kv[1])
            },
        }
        if model_max_length is not None:
            config["model_max_length"] = model_max_length
        _os.makedirs(directory, exist_ok=True)
        with FileSet() as files:  # the three files as a set: a failure leaves the old ones
            files.text(_os.path.join(directory, "tokenizer.json"), tokenizer_json)
            for name, doc in (("tokenizer_config.json", config),
                              ("special_tokens_map.json", roles)):
                files.text(_os.path.join(directory, name),
                           json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
            files.publish()

    @classmethod
    def from_file(cls, path, *, pattern=None, special_tokens=None):
        """Read a tokenizer in any of the formats this library writes, plain
        or gzipped, told apart by their content: the native format, a
        tokenizer.json, a directory holding one (or GPT-2's vocab.json and
        merges.txt), or a .tiktoken file.  A .tiktoken file holds neither
        pattern nor special tokens: they come from its sidecar ``path +
        ".json"`` (which must name this file by its sha256), or, for OpenAI's
        files (gpt2, p50k_base, cl100k_base, o200k_base: known by their
        sha256), from their encoding; any other needs `pattern` (ValueError
        otherwise: nothing is read with a guessed pattern).  `pattern` (a
        name or a regex) and `special_tokens` (as from_tiktoken takes them,
        or a set's name: SPECIAL_TOKENS): for the formats that hold none
        (GPT-2 files: default "gpt2"; .tiktoken, where they replace the
        sidecar's or the encoding's).

        >>> import os, tempfile
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<s>"])
        >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
        >>> tok.save_huggingface(path); Tokenizer.from_file(path) == tok
        True
        """
        return _load_any(cls, _os.fspath(path), pattern, special_tokens)


# --------------------------------------------------------------------------
# Corpus work: progress, cutting files, train_files' counting, worker processes,
# encode_files
# --------------------------------------------------------------------------


def _fmt_bytes(n):
    return f"{n / 1e6:,.1f} MB" if n >= 10_000_000 else f"{n:,} bytes"


def _fmt_seconds(seconds):
    if seconds < 1:
        return f"{seconds:.2f} s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, s = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {s:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressBar:
    r"""The progress display of ``progress=True``: a callable
    ``(phase, done, total)``, as every ``progress`` argument may be.

    Phases: ``"count"`` (bytes of input counted), ``"pretokens"`` (once, the
    number of distinct pre-tokens: done == total), ``"merge"`` (merges
    learned), ``"encode"`` (bytes of input encoded).  The last call of a
    phase has ``done == total`` (training that stops early ends its merge
    phase with the number it learned).

    On a terminal, a bar with the rate and the time left is rewritten in place;
    elsewhere (a log file) a line is written every `interval` seconds (default
    10), and one when each phase ends.  `stream`: default sys.stderr.

    >>> import io
    >>> log = io.StringIO()
    >>> show = ProgressBar(log)
    >>> show("merge", 0, 300); show("merge", 300, 300)
    >>> log.getvalue()
    'learned 300 merges in 0.00 s\n'
    """

    _DONE = {"count": "counted", "merge": "learned", "encode": "encoded"}
    _DOING = {"count": "counting", "merge": "merging", "encode": "encoding"}

    def __init__(self, stream=None, interval=None):
        self.stream, self.interval = stream, interval
        self.phase = None
        self.width = 0  # of the status line on a terminal

    def __call__(self, phase, done, total):
        out = self.stream if self.stream is not None else _sys.stderr
        tty = _isatty(out)
        now = _time.monotonic()
        if phase == "pretokens":
            self._line(out, tty, f"counted {done:,} distinct pre-tokens")
            return
        if phase != self.phase or done < self.seen:
            self.phase, self.start, self.shown, self.seen = phase, now, None, done
            self.mark = (now, done)
        self.seen = done
        elapsed = now - self.start
        unit = "merges" if phase == "merge" else "bytes"
        if total is not None and done >= total:
            if self.shown != "end":
                self.shown = "end"
                amount = f"{done:,} merges" if unit == "merges" else _fmt_bytes(done)
                rate = ""
                if elapsed >= 0.1 and done:
                    rate = f" ({done / elapsed:,.0f}/s)" if unit == "merges" else \
                        f" ({done / elapsed / 1e6:,.1f} MB/s)"
                self._line(out, tty, f"{self._DONE.get(phase, phase)} {amount} in "
                                     f"{_fmt_seconds(elapsed)}{rate}")
            return
        interval = self.interval if self.interval is not None else (0.25 if tty else 10.0)
        since = now - (self.start if self.shown is None else self.shown)
        if (self.shown is not None or not tty) and since < interval:
            return
        # merges speed up as training goes on: their rate is the recent one
        then, before = self.mark if unit == "merges" else (self.start, 0)
        rate = (done - before) / (now - then) if now - then > 1e-3 else 0.0
        self.mark, self.shown = (now, done), now
        text = f"{self._DOING.get(phase, phase)}: "
        if total:
            share = min(done / total, 1.0)
            if tty:
                filled = int(share * 24)
                text += "[" + "#" * filled + "." * (24 - filled) + "] "
            text += f"{100 * share:.0f}% "
        if unit == "merges":
            text += f"{done:,}/{total:,} merges" if total else f"{done:,} merges"
            text += f", {rate:,.0f}/s" if rate else ""
        else:
            text += f"{done / 1e6:,.1f}/{total / 1e6:,.1f} MB" if total else _fmt_bytes(done)
            text += f", {rate / 1e6:,.1f} MB/s" if rate else ""
        if rate and total:
            text += f", {_fmt_seconds((total - done) / rate)} left"
        if tty:
            out.write("\r" + text + " " * max(self.width - len(text), 0))
            self.width = len(text)
            out.flush()
        else:
            self._line(out, tty, text)

    def _line(self, out, tty, text):
        if tty:
            text = "\r" + text + " " * max(self.width - len(text), 0)
            self.width = 0
        out.write(text + "\n")
        out.flush()
def _read_bytes(path, start, end):
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(end - start)


def _read_range(path, start, end):
    """The text of bytes [start, end) of a UTF-8 file (bad bytes -> U+FFFD, with a warning)."""
    data = _read_bytes(path, start, end)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        _warn(f"{path}: invalid UTF-8 at byte {start + e.start} (and maybe elsewhere); such "
              f"bytes are read as U+FFFD")
        text = data.decode("utf-8", "replace")
    return text


def _warn(message, category=UserWarning):
    """warnings.warn, attributed to the line that called the library (the
    first frame outside this module), wherever in it the warning arose.
    Within a _WarnOnce scope, a warning given already (byte offsets aside)
    is not given again."""
    if not _WarnOnce.first(message):
        return
    frame, level = _sys._getframe(1), 2  # level: warnings.warn's stacklevel of `frame`
    while frame is not None and frame.f_globals.get("__name__") in _OWN_MODULES:
        frame, level = frame.f_back, level + 1
    _warnings.warn(message, category, stacklevel=level)


class _WarnOnce:
    """A scope (a with block around a corpus call: train_files,
    encode_files) in which each warning is given once: a file whose bad bytes
    fall in several of its chunks is warned about once, not per chunk (the
    chunks' warnings differ only by their byte offsets, and may come from
    threads or, relayed, from worker processes)."""

    _lock = _threading.Lock()
    _depth = 0
    _seen = set()
    _OFFSET = _regex.compile(r" at byte \d+")

    def __enter__(self):
        with self._lock:
            type(self)._depth += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            type(self)._depth -= 1
            if not self._depth:
                self._seen.clear()

    @classmethod
    def first(cls, message):
        """Whether `message` is to be given: outside a scope always, inside
        the first time."""
        with cls._lock:
            if not cls._depth:
                return True
            key = cls._OFFSET.sub("", str(message))
            if key in cls._seen:
                return False
            cls._seen.add(key)
            return True


_OWN_MODULES = frozenset([__name__, "bpe"])  # "bpe": the compiled backend


_COUNT_PIECE = 1 << 20

# train_files' unit of work: bytes [start, end) of a file, "text" or "jsonl"
_CountJob = _collections.namedtuple("_CountJob", "path start end kind")
# what every count job is counted with: the pattern, the special tokens (split out and
# never counted) and the field of a JSON record that holds its text
_CountOptions = _collections.namedtuple("_CountOptions", "pattern specials text_field")


def _job_texts(job, options):
    """The documents of a count job, a list per piece: a text file's range
    is read in pieces of about _COUNT_PIECE bytes cut where its pre-tokens do
    not change (as the jobs are), a JSON lines range in pieces of whole
    lines, each record one document: a job's memory is a piece, not its text."""
    path, start, end, kind = job
    jsonl = kind == "jsonl"
    cut_re = _LINE_CUT if jsonl else _cut_kind(options.pattern, options.specials)
    with open(path, "rb") as f:
        pieces = _ranges(f, end, start, end, _COUNT_PIECE, cut_re)
    for a, b in pieces:
        if jsonl:
            yield list(read_jsonl(_read_bytes(path, a, b), text_field=options.text_field,
                                  name=path, offset=a))
        else:
            yield [_read_range(path, a, b)]


def _count_job(job, options, core, counter):
    """Count the pre-tokens of bytes [start, end) of a file into `counter`
    (a core's)."""
    special_re = _special_regex(options.specials)
    for texts in _job_texts(job, options):
        for text in texts:
            _count_into(counter, text, core.repair, special_re)


def _find_cut(f, pos, size, cut_re):
    """First offset >= pos where a file may be cut without changing its
    pre-tokens (see _FILE_CUTS), or None.  Cuts fall between ASCII bytes,
    never inside a UTF-8 sequence."""
    window = 1 << 16
    while pos < size:
        f.seek(pos - 1)
        data = f.read(window + 2)
        m = cut_re.search(data, 1)
        if m is not None and pos - 1 + m.end() < size:
            return pos - 1 + m.end()
        pos += window
    return None


_LINE_CUT = _regex.compile(rb"\n")  # JSON lines: after any line feed


def _ranges(f, size, start, end, chunk_size, cut_re):
    """(start, end) ranges covering bytes [start, end) of an open file, each
    about `chunk_size` bytes, cut only where `cut_re` allows (None: no cut)."""
    ranges = []
    if cut_re is not None:
        while start + chunk_size < end:
            cut = _find_cut(f, start + chunk_size, end, cut_re)
            if cut is None:
                break
            ranges.append((start, cut))
            start = cut
    ranges.append((start, end))
    return ranges


def _is_cut(f, pos, size, cut_re):
    """Whether a file may be cut at `pos` (its ends always may)."""
    if pos in (0, size):
        return True
    if cut_re is None:
        return False
    f.seek(pos - 1)
    m = cut_re.match(f.read(2))
    return m is not None and m.end() == 1


def file_cuts(file, chunk_size, *, pattern="gpt2", special_tokens=(), jsonl=False):
    r"""Cut a file into byte ranges of about `chunk_size` bytes that can be
    read, counted and encoded apart: the ranges' pre-tokens are those of the
    whole text (the rule ``train_files`` and ``encode_files`` use), or, with
    ``jsonl=True``, each range holds whole lines.  A custom pattern is cut
    between an ASCII letter or digit and a line feed where it is of the GPT
    family (``pattern_program``) and that is safe for it, else not at all,
    as ``"bytes"``.  `file`: a path, or a binary file open for reading.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("one line\nanother line\n" * 3)
    >>> file_cuts(path, 10)
    [(0, 21), (21, 43), (43, 65), (65, 66)]
    >>> file_cuts(path, 10, pattern=r"\w+|\W")
    [(0, 21), (21, 43), (43, 65), (65, 66)]
    >>> file_cuts(path, 10, pattern=r"\w+\n?|\W")   # a word takes the line feed after it
    [(0, 66)]
    """
    if jsonl:
        cut_re = _LINE_CUT
    else:
        cut_re = _cut_kind(resolve_pattern(pattern), _check_specials(special_tokens))
    _check_int("chunk_size", chunk_size, 1)
    if isinstance(file, (str, bytes, _os.PathLike)):
        if not _os.path.isfile(file):  # a FIFO would block open(), /dev/zero look empty
            raise ValueError(f"no such file: {file!r}" if not _os.path.exists(file)
                             else f"{file!r} is not a regular file")
        with open(file, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            _not_gzip(f, _os.fsdecode(file))
            return _ranges(f, size, 0, size, chunk_size, cut_re)
    size = file.seek(0, _os.SEEK_END)
    _not_gzip(file, getattr(file, "name", "the file"))
    return _ranges(file, size, 0, size, chunk_size, cut_re)


def _not_gzip(f, name):
    """file_cuts' ranges are of the file's own bytes: a gzip stream cannot be
    read from the middle (train_files and encode_files inflate it first)."""
    f.seek(0)
    if f.read(2) == b"\x1f\x8b":
        raise ValueError(f"{name}: a gzip file cannot be cut into byte ranges read apart; "
                         f"inflate it first (train_files and encode_files read it whole)")


def _file_jobs(paths, chunk_size, pattern, specials, kinds):
    text_cut = _cut_kind(pattern, specials)
    jobs = []
    for path, kind in zip(paths, kinds):
        with open(path, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            cut_re = _LINE_CUT if kind == "jsonl" else text_cut
            jobs += [_CountJob(path, a, b, kind)
                     for a, b in _ranges(f, size, 0, size, chunk_size, cut_re)]
    return jobs


def _check_workers(workers):
    if workers is None:
        return _os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, not {workers!r}")
    return workers


def _plain_name(path):
    """A corpus file's name less a ".gz" (what it holds once inflated)."""
    return path[:-3] if path.lower().endswith(".gz") else path


def _is_gzip(path):
    """Whether a corpus file is gzip: named *.gz, or starting with gzip's magic
    bytes (which no UTF-8 text starts with)."""
    if path.lower().endswith(".gz"):
        return True
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


class _Inflated:
    """``with _Inflated(paths) as paths:`` the corpus files, each gzip one
    (see _is_gzip) inflated by the loaders' stepwise reader into a temporary
    file of its name less ".gz" (removed at the end), so that it is read, cut
    and counted as the plain file would be: offsets are the inflated text's.
    ``name(path)`` gives back the path the caller named, and a ValueError
    raised inside names the caller's files, not the temporary ones."""

    live = {}  # every temporary file of this process's _Inflated -> the path it inflates

    def __init__(self, paths):
        self.paths = list(paths)
        self.names = {}
        self.directory = None

    def __enter__(self):
        out = []
        try:
            for path in self.paths:
                out.append(self._inflate(path) if _is_gzip(path) else path)
        except BaseException:
            self._remove()
            raise
        return out

    def _inflate(self, path):
        import tempfile

        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="bpe-inflated-")
        base = _os.path.basename(_plain_name(path))
        tmp = _os.path.join(tempfile.mkdtemp(dir=self.directory), base or "corpus")
        with open(path, "rb") as f, open(tmp, "wb") as out:
            for piece in _inflate_steps(iter(lambda: f.read(_INFLATE_STEP), b""), path):
                out.write(piece)
        self.names[tmp] = self.live[tmp] = path
        return tmp

    def name(self, path):
        return self.names.get(path, path)

    def _remove(self):
        for tmp in self.names:
            self.live.pop(tmp, None)
        if self.directory is not None:
            import shutil

            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __exit__(self, kind, value, traceback):
        self._remove()
        if isinstance(value, ValueError) and self.names:
            text = str(value)
            for tmp, path in self.names.items():
                text = text.replace(tmp, path)
            if text != str(value):
                raise ValueError(text) from None
        return False


def _count_kinds(paths, jsonl):
    """How train_files reads each file: "jsonl" or "text".  A .jsonl or
    .ndjson file read as text (jsonl=None) is warned about: its JSON syntax
    would be learned as tokens."""
    if jsonl is not None and not isinstance(jsonl, bool):
        raise TypeError(f"jsonl must be None, True or False, not {jsonl!r}")
    if jsonl is None:
        for p in paths:
            if _plain_name(p).lower().endswith(_JSONL_SUFFIXES):
                _warn(f"{p}: JSON lines trained as plain text (the JSON syntax becomes tokens); "
                      f"pass jsonl=True (bpe train --jsonl) to train on each record's text, or "
                      f"jsonl=False to keep the raw text")
                break
    return ["jsonl" if jsonl else "text"] * len(paths)


def _count_files(core, paths, options, workers, chunk_size, report=None, jsonl=None):
    """Count the pre-tokens of files with a core's counters, one job (a safe
    byte range) at a time, into one counter (returned: the compiled core's
    learn_merges reads it without making a Python object per pre-token).
    Workers: threads of this process when the core counts without the GIL
    (the compiled one), else worker processes."""
    if isinstance(paths, (str, bytes, _os.PathLike)):
        paths = [paths]
    paths = [_os.fsdecode(p) for p in paths]
    for p in paths:
        if not _os.path.isfile(p):
            raise ValueError(f"no such file: {p!r}" if not _os.path.exists(p)
                             else f"{p!r} is not a regular file")
    if not isinstance(options.text_field, str):
        raise TypeError(f"text_field must be a str, not {type(options.text_field).__name__}")
    kinds = _count_kinds(paths, jsonl)
    workers = _check_workers(workers)
    with _Inflated(paths) as paths, _WarnOnce():
        return _count_paths(core, paths, options, workers, chunk_size, report, kinds)


def _count_paths(core, paths, options, workers, chunk_size, report, kinds):
    """_count_files of checked, plain files."""
    if chunk_size is None:
        total = sum(_os.path.getsize(p) for p in paths)
        # memory follows the chunk, not the corpus: at most 16 MB of text per worker
        chunk_size = min(max(total // (4 * workers), 1 << 20), 1 << 24)
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, not {chunk_size!r}")
    jobs = _file_jobs(paths, chunk_size, options.pattern, options.specials, kinds)
    sizes = [job.end - job.start for job in jobs]
    total = core.counter(options.pattern)
    if workers == 1 or len(jobs) == 1:
        counted = (_count_job(job, options, core, total) for job in jobs)
        for _ in _reported(counted, sizes, report, "count"):
            pass
        return total
    workers = min(workers, len(jobs))
    if core.releases_gil:
        _count_in_threads(core, jobs, options, workers, total, sizes, report)
        return total
    with _WorkerPool(workers, "train_files", _count_task(options)) as pool:
        for packed in _reported(pool.map(jobs), sizes, report, "count"):
            total.add_packed(packed)
    return total


def _count_in_threads(core, jobs, options, workers, total, sizes, report):
    """Count the jobs in `workers` threads, each into its own counter (a core
    that counts without the GIL: they run in parallel; the first counts into
    `total`), then add the others to `total`.  This thread reads the pieces
    (reading and decoding hold the GIL anyway; their warnings and errors
    arise here, in the caller's thread) and hands them over, at most two per
    thread ahead.  On an error or Ctrl-C the threads finish what they were
    handed and stop."""
    import queue
    import threading

    special_re = _special_regex(options.specials)
    todo = queue.Queue(maxsize=2 * workers)
    failed = []

    def work(counter):
        while True:
            texts = todo.get()
            if texts is None:
                return
            if failed:
                continue
            try:
                for text in texts:
                    _count_into(counter, text, core.repair, special_re)
            except BaseException as e:  # noqa: B036 - raised again by the caller
                failed.append(e)

    def hand_over(job):
        for texts in _job_texts(job, options):
            if failed:
                raise failed[0]
            todo.put(texts)

    counters = [total] + [core.counter(options.pattern) for _ in range(workers - 1)]
    pool = [threading.Thread(target=work, args=(c,), name=f"train_files-{i}", daemon=True)
            for i, c in enumerate(counters)]
    try:
        for thread in pool:
            thread.start()
        for _ in _reported(map(hand_over, jobs), sizes, report, "count"):
            pass
    finally:
        for thread in pool:
            if thread.ident is not None:
                todo.put(None)
        for thread in pool:
            if thread.ident is not None:
                thread.join()
    if failed:
        raise failed[0]
    for counter in counters[1:]:
        total.add_packed(counter.pack())
        counter.clear()


def _reported(results, sizes, report, phase):
    """Yield `results`, reporting progress (the bytes done) as each arrives."""
    if report is None:
        yield from results
        return
    total, done = sum(sizes), 0
    report(phase, 0, total)
    for size, result in zip(sizes, results):
        done += size
        report(phase, done, total)
        yield result


# Worker processes (a core that needs the GIL: the pure-Python one).  Each is
# a fresh interpreter running this module's _worker_main, fed over pipes: it
# never imports the user's main script, so no `if __name__ == "__main__":`
# guard is needed, and `python -c` and a script on stdin work.  Messages are
# frames: a 4-byte length, a JSON header, then the raw byte blobs the header
# lists (no pickle).  The first message sets a worker up for its task.

def _send(f, header, blobs=()):
    import json

    blobs = [bytes(b) for b in blobs]
    header = dict(header, blobs=[len(b) for b in blobs])
    data = json.dumps(header, separators=(",", ":")).encode("utf-8")
    f.write(len(data).to_bytes(4, "little") + data)
    for blob in blobs:
        f.write(blob)
    f.flush()


def _read_exact(f, n):
    data = f.read(n)
    if len(data) != n:
        raise EOFError("the other end closed the pipe")
    return data


def _recv(f):
    import json

    header = json.loads(_read_exact(f, int.from_bytes(_read_exact(f, 4), "little")))
    return header, [_read_exact(f, n) for n in header.pop("blobs")]


def _count_task(options):
    """train_files' setup message for a worker process."""
    return {"task": "count", "pattern": options.pattern, "specials": list(options.specials),
            "text_field": options.text_field}, []


def _encode_task(tok, options):
    """encode_files' setup message: the model's compact state (what pickling
    sends, never a registered encoding's name: a worker would read its file
    again), and the options."""
    key, blob = _compact_state(tok)
    header = {"task": "encode", "key": key, "name": tok.name,
              "options": dict(options._asdict(), allowed=sorted(options.allowed),
                              disallowed=sorted(options.disallowed))}
    return header, [blob]


def _worker_setup(header, blobs, tokenizer_class):
    """In a worker: the task's setup message -> a function of a job (the job's
    reply header and blobs); `tokenizer_class` makes an encode task's model."""
    if header["task"] == "count":
        options = _CountOptions(header["pattern"], tuple(header["specials"]),
                                header["text_field"])

        def count(job):
            counter = Core.counter(options.pattern)
            _count_job(_CountJob(*job), options, Core, counter)
            return {"counts": counter.pack()}, []

        return count
    tok = _unpickle_model(tokenizer_class, header["key"], blobs[0], header["name"])
    o = header["options"]
    options = _EncodeOptions(**dict(o, allowed=frozenset(o["allowed"]),
                                    disallowed=frozenset(o["disallowed"])))

    def encode(job):
        parts = _encode_job(_EncodeJob(*job), tok, options)
        return {"parts": [[n, docs] for _, n, docs in parts]}, [data for data, _, _ in parts]

    return encode


def _worker_main(setup, tokenizer_class):
    """A worker process: set up by the first message (`setup(header, blobs,
    tokenizer_class)` gives the task), then one reply per job message until
    standard input ends.  Ctrl-C is left to the parent."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    source = _sys.stdin.buffer
    sink = open(_os.dup(1), "wb")
    _os.dup2(2, 1)  # whatever else prints goes to stderr, not into the replies
    _sys.stdout = _sys.stderr
    try:
        header, blobs = _recv(source)
        task = setup(header, blobs, tokenizer_class)
    except EOFError:
        return
    _send(sink, {"ready": True})
    while True:
        try:
            header, _ = _recv(source)
        except EOFError:
            return
        with _warnings.catch_warnings(record=True) as caught:
            _warnings.simplefilter("always")
            try:
                reply, blobs = task(header["job"])
            except Exception as e:  # noqa: BLE001 - raised again in the parent
                reply, blobs = {"error": [type(e).__name__, str(e)]}, []
        reply["warnings"] = [[str(w.message), w.category.__name__] for w in caught]
        _send(sink, reply, blobs)


class _WorkerDied(Exception):
    pass


def _raised(name, message):
    """The exception a worker raised, rebuilt in the parent."""
    import builtins

    cls = getattr(builtins, name, None)
    if cls in (ValueError, TypeError, OSError, MemoryError, RuntimeError, ArithmeticError,
               OverflowError, FileNotFoundError, PermissionError, IsADirectoryError):
        return cls(message)
    if isinstance(cls, type) and issubclass(cls, ValueError):
        return ValueError(message)
    return RuntimeError(f"{name}: {message}")


class _WorkerPool:
    """Worker processes for train_files and encode_files (see _worker_main):
    `task` (a setup message) is sent to each; submit(job) returns a Future of
    the worker's reply.  They are started with the interpreter's own flags
    and this process's sys.path, not forked (a lock another thread holds
    would stay held in the child).  On any error or interrupt every worker is
    stopped; a worker that dies is a RuntimeError naming `what`.  A job's
    warnings are raised again here; nothing is written to disk."""

    def __init__(self, workers, what, task):
        import queue
        import subprocess
        import threading

        self.what, self.workers, self.task = what, workers, task
        self.queue = queue.SimpleQueue()
        self.broken = None
        self.procs, self.threads = [], []
        code = (f"import sys; sys.path[:0] = {[p for p in _sys.path if isinstance(p, str)]!r}; "
                f"import {__name__} as m; m._worker_main(m._worker_setup, m.Tokenizer)")
        args = [_sys.executable, *subprocess._args_from_interpreter_flags(), "-c", code]
        try:
            for i in range(workers):
                proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                self.procs.append(proc)
                thread = threading.Thread(target=self._serve, args=(proc,),
                                          name=f"{what}-worker-{i}", daemon=True)
                self.threads.append(thread)
                thread.start()
        except BaseException:
            self.stop()
            raise

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.shutdown()
        else:
            self.stop()  # Ctrl-C or a failed job: stop every worker now, leave none behind
        if isinstance(value, _WorkerDied):
            raise RuntimeError(f"{self.what}: a worker process died (killed, or out of "
                               f"memory?) or could not start") from value
        return False

    def _serve(self, proc):
        """One worker's thread: its setup, then the jobs it takes from the queue."""
        current = None
        try:
            _send(proc.stdin, *self.task)
            _recv(proc.stdout)  # ready
            while True:
                item = self.queue.get()
                if item is None:
                    return
                current, job = item
                if not current.set_running_or_notify_cancel():
                    continue
                if job is None:  # submit(None): whether a worker is ready
                    current.set_result(None)
                    continue
                _send(proc.stdin, {"job": job})
                current.set_result(_recv(proc.stdout))
                current = None
        except (OSError, EOFError, ValueError) as e:
            self._broke(e, current)

    def _broke(self, error, current):
        import queue

        if self.broken is None:
            self.broken = _WorkerDied(f"{self.what}: a worker process died ({error})")
        if current is not None and not current.done():
            current.set_exception(self.broken)
        stops = 0  # the end-of-work marks (None) met are put back, for the other threads
        while True:  # no worker may wait for jobs no one will take
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                stops += 1
            elif item[0].set_running_or_notify_cancel():
                item[0].set_exception(self.broken)
        for _ in range(stops):
            self.queue.put(None)

    def submit(self, job):
        """A Future of a worker's reply to `job` (a list; None: of it being ready)."""
        from concurrent.futures import Future

        future = Future()
        if self.broken is not None:
            future.set_exception(self.broken)
        else:
            self.queue.put((future, None if job is None else list(job)))
        return future

    @staticmethod
    def result(future):
        reply = future.result()
        if reply is None:
            return None
        header, blobs = reply
        for message, category in header.get("warnings", ()):
            import builtins

            cls = getattr(builtins, category, None)
            if not (isinstance(cls, type) and issubclass(cls, Warning)):
                cls = UserWarning
            _warn(message, cls)
        if "error" in header:
            raise _raised(*header["error"])
        if "counts" in header:
            return header["counts"]
        return [(blob, n, docs) for blob, (n, docs) in zip(blobs, header["parts"])]

    def map(self, jobs):
        """The result of each job, in order, with a few jobs per worker
        submitted ahead (not all: their results would wait in memory)."""
        jobs = iter(jobs)
        ahead = _collections.deque(self.submit(job)
                                   for job in _itertools.islice(jobs, 2 * self.workers))
        while ahead:
            future = ahead.popleft()
            ahead.extend(self.submit(job) for job in _itertools.islice(jobs, 1))
            yield self.result(future)

    def shutdown(self):
        """Let the workers finish (their standard input ends) and wait for them."""
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join()
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(10)
            except Exception:  # noqa: BLE001 - a worker that does not end is killed
                proc.kill()
                proc.wait()
            proc.stdout.close()

    def stop(self):
        """Stop every worker now; the futures not yet done fail."""
        self._broke(OSError("stopped"), None) if self.broken is None else None
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join()
        for proc in self.procs:
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass


# Encoding files to arrays of ids (Tokenizer.encode_files)

_DTYPES = {"uint16": 2, "uint32": 4}
_JSONL_SUFFIXES = (".jsonl", ".ndjson")
_IDS_FORMAT = "bpe-ids"

# encode_files' unit of work: bytes [start, end) of a file, "text" or "jsonl", and
# whether they start / end the file (where a text file's document starts and ends)
_EncodeJob = _collections.namedtuple("_EncodeJob",
                                     "path start end kind starts_document ends_document val")
# what every job is encoded with: the special-token policy, the id appended after each
# document (or None), the bytes per id, the field of a JSON record that holds its text,
# and the validation split: None, or [key, threshold] (see _is_val)
_EncodeOptions = _collections.namedtuple("_EncodeOptions",
                                         "allowed disallowed eot itemsize text_field val")


def _is_val(data, val):
    """Whether a document (its bytes, or a hash object fed them) goes to the
    validation file: blake2b(data, key=str(seed), digest_size=8) (an 8-byte
    digest, not the first 8 bytes of the default one) as a little-endian
    integer, below int(val_fraction * 2**64)."""
    import hashlib

    key, threshold = val
    h = data if not isinstance(data, (bytes, bytearray)) else hashlib.blake2b(
        data, key=key.encode("utf-8"), digest_size=8)
    return int.from_bytes(h.digest()[:8], "little") < threshold


def _file_is_val(path, val):
    """_is_val of a whole file's bytes (a text file is one document)."""
    import hashlib

    h = hashlib.blake2b(key=val[0].encode("utf-8"), digest_size=8)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return _is_val(h, val)


def _val_options(val_fraction, seed):
    """encode_files' val_fraction and seed -> _EncodeOptions.val."""
    if val_fraction is None:
        return None
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) or \
            not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be a number between 0 and 1 (exclusive), not "
                         f"{val_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    return [str(seed), min(int(val_fraction * 2 ** 64), 2 ** 64 - 1)]


def _val_path(out):
    """Where encode_files writes the validation split of `out` by default: its
    name with the last "train" replaced by "val" (``data/train.bin`` ->
    ``data/val.bin``), else ``NAME.val.EXT``.

    >>> _val_path("data/train.bin"), _val_path("corpus.bin")
    ('data/val.bin', 'corpus.val.bin')
    """
    out = _os.fspath(out)
    head, name = _os.path.split(out)
    at = name.rfind("train")
    if at >= 0:
        name = name[:at] + "val" + name[at + 5:]
    else:
        stem, ext = _os.path.splitext(name)
        name = f"{stem}.val{ext}"
    return _os.path.join(head, name)


def _ids_dtype(tok, dtype):
    need = "uint16" if tok.vocab_size <= 1 << 16 else "uint32"
    if dtype is None:
        return need
    name = str(getattr(dtype, "__name__", dtype))  # "uint16", numpy.uint16, numpy.dtype("uint16")
    if name not in _DTYPES:
        raise ValueError(f"dtype must be 'uint16' or 'uint32', not {dtype!r}")
    if _DTYPES[name] < _DTYPES[need]:
        raise ValueError(f"dtype uint16 cannot hold ids up to {tok.vocab_size - 1}: use uint32")
    return name


def _eot_id(tok, eot):
    if eot is None:
        return None
    if isinstance(eot, str):
        if eot not in tok._specials:
            raise ValueError(f"eot {eot!r} is not a special token of this tokenizer "
                             f"(it has {sorted(tok._specials) or 'none'})")
        return tok._specials[eot]
    if isinstance(eot, bool) or not isinstance(eot, int):
        raise TypeError("eot must be a special token (str) or an id (int), not "
                        f"{type(eot).__name__}")
    if eot not in tok._decoder:
        raise ValueError(f"eot {eot} is not an id of this tokenizer")
    return eot


def _encode_inputs(paths):
    """paths -> [(path, start or None, end or None)]."""
    if isinstance(paths, (str, bytes, _os.PathLike)) or (
            isinstance(paths, tuple) and len(paths) == 3 and isinstance(paths[1], int)):
        paths = [paths]
    inputs = []
    for item in paths:
        if isinstance(item, tuple):
            if not (len(item) == 3 and all(isinstance(x, int) and not isinstance(x, bool)
                                            for x in item[1:])):
                raise TypeError(f"a range must be (path, start, end), not {item!r}")
            path, start, end = item
        else:
            path, start, end = item, None, None
        if not isinstance(path, (str, bytes, _os.PathLike)):
            raise TypeError(f"expected a path, not {type(path).__name__}: {path!r}")
        path = _os.fsdecode(path)
        if not _os.path.isfile(path):
            raise ValueError(f"no such file: {path!r}" if not _os.path.exists(path)
                             else f"{path!r} is not a regular file")
        inputs.append((path, start, end))
    return inputs


def _plan_encode(tok, inputs, jsonl, chunk_size, workers, threads=False, disallowed=(),
                 val=None):
    """(jobs, the input of each job, the inputs as (path, start, end)); a job
    is an _EncodeJob.  By default each worker gets about 8 chunks, 32 when
    the workers are threads (a job costs a thread almost nothing, and smaller
    ones leave less of a last one for one thread to finish alone), of 256 KB
    to 4 MB.  The jobs check their own text for `disallowed` strings; one
    that a cut of a text file splits is refused here, as encode refuses it."""
    if chunk_size is None:
        total = sum(_os.path.getsize(p) if s is None else e - s for p, s, e in inputs)
        chunk_size = min(max(total // ((32 if threads else 8) * workers), 1 << 18), 1 << 22)
    _check_int("chunk_size", chunk_size, 1)
    text_cut = _cut_kind(tok._pattern, tuple(tok._specials))
    needles = [s.encode("utf-8", "surrogatepass") for s in disallowed if len(s) > 1]
    jobs, owners, ranges = [], [], []
    for path, start, end in inputs:
        kind = "jsonl" if (path.lower().endswith(_JSONL_SUFFIXES) if jsonl is None else jsonl) \
            else "text"
        cut_re = _LINE_CUT if kind == "jsonl" else text_cut
        with open(path, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            if start is None:
                start, end = 0, size
            if not 0 <= start <= end <= size:
                raise ValueError(f"{path}: range ({start}, {end}) is not within the file "
                                 f"({size} bytes)")
            for pos in (start, end):
                if not _is_cut(f, pos, size, cut_re):
                    raise ValueError(f"{path}: byte {pos} is not a place where the file may be "
                                     f"cut (take the ranges from file_cuts)")
            side = 1 if kind == "text" and val is not None and _file_is_val(path, val) else 0
            cuts = _ranges(f, size, start, end, chunk_size, cut_re)
            for a, b in cuts:
                jobs.append(_EncodeJob(path, a, b, kind, a == 0, b == size, side))
                owners.append(len(ranges))
            if kind == "text" and needles:  # (a JSON line's text is a document of its own)
                for pos in {start, end, *(a for a, _ in cuts)} - {0, size}:
                    found = _split_by_cut(f, pos, needles)
                    if found is not None:
                        tok._check_disallowed(found, frozenset([found]))
        ranges.append((path, start, end))
    return jobs, owners, ranges


def _split_by_cut(f, pos, needles):
    """The first of `needles` (bytes) that a cut of file `f` at `pos` would
    split, as text; None if none."""
    reach = max(map(len, needles)) - 1
    low = max(pos - reach, 0)
    f.seek(low)
    window = f.read(pos + reach - low)
    for s in needles:
        i = window.find(s, max(pos - low - len(s) + 1, 0))
        if i != -1 and low + i < pos:
            return s.decode("utf-8", "surrogatepass")
    return None


def read_jsonl(data, *, text_field="text", name="<data>", offset=0):
    r"""Yield the `text_field` of each record of JSON lines, the documents
    ``encode_files`` reads: `data` is bytes, or a binary file (read line by
    line).  Blank lines are skipped; a line that is not a JSON object with a
    string `text_field` is a ValueError naming `name` and the line's byte
    offset (counted from `offset`).

    >>> list(read_jsonl(b'{"text": "a cat", "id": 1}\n\n{"text": "a dog"}\n'))
    ['a cat', 'a dog']
    """
    import json

    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, not {type(text_field).__name__}")
    whole = isinstance(data, (bytes, bytearray))
    lines = data.split(b"\n") if whole else data  # a file's lines keep their line feeds
    pos = offset
    for line in lines:
        where, pos = pos, pos + len(line) + whole
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as e:
            why = "not UTF-8" if isinstance(e, UnicodeDecodeError) else "not JSON"
            raise ValueError(f"{name}: the line at byte {where} is {why} "
                             f"({' '.join(str(e).split())[:80]})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{name}: the line at byte {where} is a JSON "
                             f"{type(record).__name__}, not an object")
        text = record.get(text_field)
        if not isinstance(text, str):
            raise ValueError(f"{name}: the line at byte {where} has no string field {text_field!r}"
                             + ("" if text is None else f" (it is {json.dumps(text)[:40]})"))
        yield text


def _read_job(job, options):
    """The documents of a job, read: ([text], None) for a text file's range;
    for JSON lines, (the records' texts, the ValueError of a bad line that
    ended them, or None)."""
    if job.kind != "jsonl":
        return [_read_range(job.path, job.start, job.end)], None
    texts = []
    try:
        for text in read_jsonl(_read_bytes(job.path, job.start, job.end),
                               text_field=options.text_field, name=job.path, offset=job.start):
            texts.append(text)
    except ValueError as e:
        return texts, e  # raised after the records before it are encoded
    return texts, None


def _encode_read(job, read, tok, options, pack=None):
    """Encode a job's documents (what _read_job gave): a list of parts
    (packed ids, number of ids, document starts), one for `out` and, with a
    validation split, one for the validation file.  `pack`: None, or this
    thread's function text -> the packed ids of encode_ordinary(text) (a
    core's, made without the GIL and without a list of ids), used when no
    special token is allowed."""
    kind, starts_doc, ends_doc = job.kind, job.starts_document, job.ends_document
    allowed, disallowed, eot, itemsize = (options.allowed, options.disallowed, options.eot,
                                          options.itemsize)
    texts, error = read
    if allowed:
        pack = None  # the tokenizer splits the text on the allowed ones
    jsonl = kind == "jsonl"
    # each side: the ids (or, with pack, packed parts), the document starts, the count
    sides = [[[], [], 0] for _ in range(1 if options.val is None else 2)]
    eot_item = eot if pack is None or eot is None else _pack_ids([eot], itemsize)
    for text in texts:
        if jsonl:
            text = tok._core.repair(text)  # a JSON string may hold a lone surrogate
        tok._check_disallowed(text, disallowed)
        if options.val is None:
            side = sides[0]
        elif jsonl:
            side = sides[_is_val(text.encode("utf-8"), options.val)]
        else:
            side = sides[job.val]
        out, docs, count = side
        if jsonl or starts_doc:
            docs.append(count)
        if pack is None:
            out = tok._encode_allowed(text, allowed, out)
        else:
            out.append(pack(text))
            count += len(out[-1]) // itemsize
        if eot is not None and (jsonl or ends_doc):
            out.append(eot_item)
            count += 1
        if pack is None:
            count = len(out)
        side[0], side[2] = out, count
    if error is not None:
        raise error
    if pack is None:
        return [(tok._core.pack_ids(out, itemsize), count, docs) for out, docs, count in sides]
    return [(b"".join(out), count, docs) for out, docs, count in sides]


def _encode_job(job, tok, options, pack=None):
    """Read and encode one job: its parts (see _encode_read)."""
    return _encode_read(job, _read_job(job, options), tok, options, pack)


def _check_same_model(meta, tok, name, ids_path):
    """An array's sidecar `meta` names the model it was encoded with (its
    ``tokenizer_sha256``): decoding it with another model gives plausible
    garbage, so that is refused, naming both.  The digest is the model's
    (_tokenizer_sha256), so the same model in another file format agrees."""
    want = meta.get("tokenizer_sha256")
    if want is None:
        return
    have = _tokenizer_sha256(tok)
    if want != have:
        raise ValueError(f"{ids_path} was encoded with another tokenizer (sha256 "
                         f"{_short(want, 80)} in its sidecar) than {name} (sha256 {have!r}): "
                         "decode it with that one")


def _tokenizer_sha256(tok):
    """sha256 of the tokenizer's model: its native file (the bytes ``save``
    writes: pattern, tokens, merges, special tokens), whatever file it was
    read from; once per tokenizer.  Written in encode_files' sidecars and
    checked by ``bpe decode``."""
    import hashlib

    digest = tok.__dict__.get("_sha256")
    if digest is None:
        digest = tok._sha256 = hashlib.sha256(_native_dump(tok).encode("utf-8")).hexdigest()
    return digest


def _gil_free_core(tok):
    """The tokenizer's core if it encodes without the GIL (the compiled one),
    else None.  With one, encode_files' workers are threads of this process
    (no process to start, no model to send), each encoding with its own
    ``core.packer``; without, they are worker processes."""
    return tok._core if tok._core.releases_gil else None


def _encode_jobs(tok, jobs, options, workers):
    """Yield the results of the jobs, in order: encoded here (one worker),
    by threads (a core that encodes without the GIL), or by worker
    processes."""
    core = _gil_free_core(tok)
    if workers == 1 or len(jobs) == 1:
        pack = None if core is None else core.packer(options.itemsize)
        yield from (_encode_job(job, tok, options, pack) for job in jobs)
        return
    if core is not None:
        yield from _encode_in_threads(tok, core, jobs, options, workers)
        return
    yield from _encode_in_processes(tok, jobs, options, workers)


def _encode_in_processes(tok, jobs, options, workers):
    """Yield the results of the jobs, in order, encoded by worker processes,
    this process being one of them: it encodes jobs itself while they start
    (a thread starts them), then alongside them, holding a bounded number of
    results ahead of the one to be written next."""
    import concurrent.futures
    import threading

    n = len(jobs)
    procs = min(workers - 1, n - 1)
    window, limit = 2 * procs, 4 * workers
    pool = _WorkerPool(procs, "encode_files", _encode_task(tok, options))
    ended = threading.Event()  # this generator ended: start() stops waiting
    starter = None

    def halt():
        # The thread that starts the workers must be done before the pool is
        # stopped: a worker it started while stop() killed the others could be
        # left waiting forever on a queue lock that a killed one held.
        ended.set()
        if starter is not None:
            starter.join()  # within a tenth of a second, and the tokenizer's hash

    try:
        with pool:
            try:
                slots = {}  # job index -> a worker's future or this process's result
                started = []  # the outcome of start(): True, or the exception it raised

                def start():  # starting the processes takes a while: meanwhile this one encodes
                    try:
                        ready = []
                        for _ in range(procs):  # (each submit may start a process)
                            if ended.is_set():
                                break
                            ready.append(pool.submit(None))
                        _tokenizer_sha256(tok)  # for the sidecar, while the workers start
                        while concurrent.futures.wait(ready, 0.1).not_done and not ended.is_set():
                            pass  # (a stopped pool may never finish a starting worker's future)
                        started.append(True)
                    except BaseException as e:  # noqa: B036 - raised again in the caller
                        started.append(e)

                starter = threading.Thread(target=start, name="encode_files-start", daemon=True)
                starter.start()
                head = following = 0
                while head < n:
                    slot = slots.get(head)
                    if isinstance(slot, list) or (slot is not None and slot.done()):
                        del slots[head]
                        head += 1
                        yield slot if isinstance(slot, list) else pool.result(slot)
                        continue
                    if started and started[0] is not True:
                        raise started[0]
                    if started:  # keep every worker process busy
                        busy = sum(1 for s in slots.values()
                                   if not isinstance(s, list) and not s.done())
                        if busy < window and following < n:
                            end = min(following + window - busy, n)
                            for k in range(following, end):
                                slots[k] = pool.submit(jobs[k])
                            following = end
                            continue
                    if following < n and following - head < limit:
                        slots[following] = _encode_job(jobs[following], tok, options)
                        following += 1
                    else:
                        concurrent.futures.wait([slot])
                if not started:
                    halt()
                    pool.stop()  # done before the workers were: they have nothing to do
            finally:
                halt()  # before the pool stops
    finally:
        halt()


def _encode_in_threads(tok, core, jobs, options, workers):
    """Yield the results of the jobs, in order.  This thread reads the jobs
    (reading and decoding hold the GIL anyway; their memory is then not
    spread over the threads' malloc arenas) and writes the results; `workers`
    threads encode them, each with its own ``core.packer``.  At most
    2 x workers jobs are read and not yet written: memory follows the chunk
    size and the workers.  The first error in job order is raised as it was
    raised (in a thread, or reading); then, or on Ctrl-C or close(), the
    threads take no more jobs and are joined (each finishes the one it has)."""
    import threading

    n = len(jobs)
    threads = min(workers, n)
    ahead = 2 * threads
    shared = _JobThreads(tok, jobs, options)
    lock, done = shared.lock, shared.done
    pool = [threading.Thread(target=shared.work, args=(core.packer(options.itemsize),),
                             name=f"encode_files-{i}", daemon=True) for i in range(threads)]
    hashed = False
    try:
        for thread in pool:
            thread.start()
        for head in range(n):
            while True:
                with lock:
                    feed = (not (shared.stop or shared.failed) and shared.fed < n
                            and shared.fed - head < ahead)
                    if not feed:
                        if head in done:
                            result, error = done.pop(head)
                            break
                        if hashed:
                            lock.wait()
                            continue
                if not feed:  # nothing to read for now: the sidecar's hash meanwhile
                    _tokenizer_sha256(tok)
                    hashed = True
                    continue
                shared.feed()
            if error is not None:
                raise error
            yield result
    finally:
        with lock:
            shared.stop = True
            lock.notify_all()
        for thread in pool:
            if thread.ident is not None:  # started
                thread.join()


class _JobThreads:
    """What encode_files' encoding threads share with the thread that reads
    the jobs and writes their results (see _encode_in_threads)."""

    def __init__(self, tok, jobs, options):
        import threading

        self.tok, self.jobs, self.options = tok, jobs, options
        self.lock = threading.Condition()
        self.todo = _collections.deque()  # (job index, its documents): read, not yet taken
        self.done = {}  # job index -> (result, None) or (None, the exception it raised)
        self.fed = 0  # jobs read (or failed to read)
        self.failed = False  # reading a job failed: no more are read
        self.stop = False  # an error, Ctrl-C or close(): the threads take no more jobs

    def work(self, pack):
        """An encoding thread; `pack`: its encoder, with its own cache."""
        lock, todo, n = self.lock, self.todo, len(self.jobs)
        while True:
            with lock:
                while not (self.stop or todo or self.fed == n):
                    lock.wait()
                if self.stop or not todo:
                    return
                k, read = todo.popleft()
            try:
                outcome = (_encode_read(self.jobs[k], read, self.tok, self.options, pack), None)
            except BaseException as e:  # noqa: B036 - raised again by the writer
                outcome = (None, e)
            del read
            with lock:
                self.done[k] = outcome
                if outcome[1] is not None:
                    self.stop = True  # the jobs before this one are taken already
                lock.notify_all()

    def feed(self):
        """Read the next job (in the writer's thread) and hand it to the
        encoding threads; a job that fails to read is an outcome of its own."""
        k = self.fed
        try:
            read, bad = _read_job(self.jobs[k], self.options), None
        except Exception as e:  # noqa: BLE001 - raised in its turn, by the writer
            read, bad = None, e
        with self.lock:
            if bad is None:
                self.todo.append((k, read))
            else:
                self.done[k] = (None, bad)
                self.failed = True  # the jobs before it are read already
            self.fed += 1
            self.lock.notify_all()


def _encode_files(tok, paths, out, dtype, eot, jsonl, text_field, allowed_special,
                  disallowed_special, workers, chunk_size, progress, val_fraction=None,
                  val_out=None, seed=0):
    allowed, disallowed = tok._policy(allowed_special, disallowed_special)
    dtype = _ids_dtype(tok, dtype)
    eot = _eot_id(tok, eot)
    if not isinstance(text_field, str):
        raise TypeError(f"text_field must be a str, not {type(text_field).__name__}")
    if jsonl is not None and not isinstance(jsonl, bool):
        raise TypeError(f"jsonl must be None, True or False, not {jsonl!r}")
    val = _val_options(val_fraction, seed)
    report = _reporter(progress)
    inputs = _encode_inputs(paths)
    outs = _ids_outputs(out, val_out, val, inputs)
    inflated = _Inflated(p for p, _, _ in inputs)
    with inflated as plain, _WarnOnce():
        inputs = [(q, a, b) for q, (_, a, b) in zip(plain, inputs)]
        threads = _gil_free_core(tok) is not None  # the workers are threads, else processes
        workers = _encode_workers(workers, inputs, threads)
        jobs, owners, ranges = _plan_encode(tok, inputs, jsonl, chunk_size, workers,
                                            threads and workers > 1, disallowed, val)
        ranges = [(inflated.name(p), a, b) for p, a, b in ranges]
        options = _EncodeOptions(allowed, disallowed, eot, _DTYPES[dtype], text_field, val)
        sizes = [job.end - job.start for job in jobs]
        with FileSet() as publish:
            # the arrays, then their sidecars, published together: a failure leaves the old set
            modes = [(_existing_mode(path), _existing_mode(path + ".json")) for path in outs]
            fds = [publish.open(path, mode) for path, (mode, _) in zip(outs, modes)]
            files = [open(fd, "wb", closefd=False) for fd in fds]
            try:
                results = _encode_jobs(tok, jobs, options, workers)
                try:
                    written = _write_ids(files, owners, len(ranges),
                                         _reported(results, sizes, report, "encode"))
                finally:
                    # an error or Ctrl-C here, not in the generator: stop its workers now, not
                    # when it is collected (maybe at exit, with the threads that starts frozen)
                    results.close()
                for f in files:
                    f.flush()
            finally:
                for f in files:
                    f.close()
            by = None
            if val is not None:
                written, by = _split_sides(fds, written, _DTYPES[dtype], val_fraction, seed, outs)
            metas = _ids_metas(tok, dtype, eot, ranges, written)
            if val is not None:
                for meta, name in zip(metas, ("train", "val")):
                    meta["split"] = {"part": name, "val_fraction": val_fraction, "seed": seed,
                                     "by": by}
            for path, meta, (_, mode) in zip(outs, metas, modes):
                publish.text(path + ".json", _sidecar_text(meta), mode, describes=True)
            publish.publish()
    return metas[0]


def _split_sides(fds, written, itemsize, val_fraction, seed, outs):
    """A validation split, made whole: documents go whole to one side (by
    their hash, _is_val), but a corpus of one document (one text file, one
    record, or ranges of one file) is split by tokens instead, nanoGPT's
    way: its first ``int(n * (1 - val_fraction))`` ids stay in the training
    file and the rest go to the validation file (moved between the two
    temporary files `fds` in blocks, never held whole).  Neither side may be
    left empty: ValueError, before anything is published.  Returns (the
    `written` of the two files, "tokens" or "documents")."""
    (n0, docs0, _), (n1, docs1, _) = written
    total = n0 + n1
    train, val = outs
    if not total:
        raise ValueError(f"val_fraction {val_fraction}: the corpus has no ids to split")
    if len(docs0) + len(docs1) <= 1 and not (n0 and n1):
        keep = int(total * (1 - val_fraction))
        if not 0 < keep < total:
            raise ValueError(f"val_fraction {val_fraction}: the corpus is one document of "
                             f"{total:,} id{'s' * (total != 1)}, too few to split by tokens "
                             f"({keep:,} for {train}, {total - keep:,} for {val})")
        whole = written[0 if n0 else 1]
        _move_ids(fds, 0 if n0 else 1, keep * itemsize, total * itemsize)
        return [_clip_written(whole, 0, keep), _clip_written(whole, keep, total)], "tokens"
    if not (n0 and n1):
        full, empty = (train, val) if n0 else (val, train)
        n_docs = len(docs0) + len(docs1)
        raise ValueError(f"val_fraction {val_fraction} (seed {seed}) put all {n_docs:,} "
                         f"documents in {full} and none in {empty}: documents go whole to one "
                         f"side, by a hash of their text; pass more documents, another "
                         f"val_fraction or another seed")
    return written, "documents"


def _move_ids(fds, holder, cut, end):
    """Bytes [0, end) of one document's ids are in file fds[holder] (the
    other file is empty): leave [0, cut) in fds[0] and [cut, end) in fds[1],
    copying in blocks of a megabyte."""
    train, val = fds
    if holder == 0:
        _copy_bytes(train, cut, end, val, 0)
        _os.ftruncate(train, cut)
    else:
        _copy_bytes(val, 0, cut, train, 0)
        _copy_bytes(val, cut, end, val, 0)  # forwards: each block is read before it is written
        _os.ftruncate(val, end - cut)


def _copy_bytes(src, start, end, dst, to):
    """Copy bytes [start, end) of descriptor `src` to descriptor `dst` at `to` (<= start
    when src is dst)."""
    while start < end:
        _os.lseek(src, start, _os.SEEK_SET)
        block = _os.read(src, min(end - start, 1 << 20))
        if not block:
            raise OSError(f"a temporary file ended at byte {start}, before {end}")
        _os.lseek(dst, to, _os.SEEK_SET)
        view = memoryview(block)
        while view:
            view = view[_os.write(dst, view):]
        start += len(block)
        to += len(block)


def _clip_written(written, lo, hi):
    """What _write_ids returns for one file, for its ids [lo, hi) only: the
    count, the document starts, each input's [ids start, ids count]."""
    _, documents, spans = written
    clipped = []
    for start, n in spans:
        a, b = max(start, lo), min(start + n, hi)
        clipped.append([a - lo, b - a] if b > a else [0, 0])
    return hi - lo, [d - lo for d in documents if lo <= d < hi], clipped


def _ids_metas(tok, dtype, eot, ranges, written):
    """The sidecars of encode_files' arrays: one per (count, documents, spans) written."""
    return [{
        "format": _IDS_FORMAT, "version": 1, "dtype": dtype, "byteorder": "little",
        "count": count, "vocab_size": tok.vocab_size,
        "tokenizer_sha256": _tokenizer_sha256(tok),
        "eot": eot,
        "inputs": [{"path": p, "start": a, "end": b, "ids_start": i, "ids_count": n}
                   for (p, a, b), (i, n) in zip(ranges, spans)],
        "documents": documents,
    } for count, documents, spans in written]


def _ids_outputs(out, val_out, val, inputs):
    """encode_files' output paths, checked (the train array, then the validation one)."""
    outs = [_check_ids_output(out, inputs)]
    if val is not None:
        outs.append(_check_ids_output(_val_path(out) if val_out is None else val_out, inputs))
        if outs[1] == outs[0]:
            raise ValueError(f"the validation output is the output {outs[0]}")
        _check_distinct([outs[0], outs[0] + ".json", outs[1], outs[1] + ".json"])
    return outs


def _check_distinct(paths):
    """The files of one set are four names for four files: a name written twice
    (``val_out = out + ".json"``) would lose one of them.  ValueError naming
    both, before anything is written."""
    roles = ["the output", "the output's sidecar", "the validation output",
             "the validation output's sidecar"]
    seen = {}
    for role, path in zip(roles, paths):
        keys = {_os.path.normcase(_os.path.realpath(path))}
        try:
            st = _os.stat(path)
            keys.add((st.st_dev, st.st_ino))  # a hard link to another name of the set
        except OSError:
            pass
        for key in keys:
            if key in seen:
                other, first = seen[key]
                name = path if path == first else f"{first} and {path}"
                raise ValueError(f"{name} would be both {other} and {role} (each array has a "
                                 f"sidecar, its name + .json): name the outputs apart")
            seen[key] = role, path


def _encode_workers(workers, inputs, threads):
    """The number of workers: a worker process takes as long to start as a few MB take to
    encode (one per 8 MB of input by default); a thread starts at once (one per MB)."""
    if workers is None:
        total = sum(_os.path.getsize(p) if a is None else b - a for p, a, b in inputs)
        workers = max(1, min(_os.cpu_count() or 1, total >> (20 if threads else 23)))
    return _check_workers(workers)


def _check_ids_output(out, inputs):
    """The absolute path of encode_files' output, checked: in a directory
    that exists, and neither it nor its sidecar an input."""
    out = _os.path.abspath(_os.fspath(out))
    directory = _os.path.dirname(out)
    if _os.path.isdir(out):
        raise ValueError(f"cannot write {out}: it is a directory")
    if not _os.path.isdir(directory):
        raise ValueError(f"cannot write {out}: no directory {directory}")
    _check_not_input([out, out + ".json"], [path for path, _, _ in inputs])
    return out


def _sidecar_text(meta):
    """JSON, one key per line and one input per line (lists of numbers on one line)."""
    import json

    lines = []
    for key, value in meta.items():
        if key == "inputs":
            text = ("[\n" + ",\n".join("  " + json.dumps(v) for v in value) + "\n ]"
                    if value else "[]")
        else:
            text = json.dumps(value)
        lines.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _write_ids(files, owners, n_inputs, results):
    """Write the jobs' packed ids in order, each part to its file: for each
    file (count, document starts, [ids start, ids count] of each input)."""
    written = [(0, [], [[0, 0] for _ in range(n_inputs)]) for _ in files]
    for owner, parts in zip(owners, results):
        for k, (f, (data, n, docs)) in enumerate(zip(files, parts)):
            count, documents, spans = written[k]
            if not spans[owner][1]:
                spans[owner][0] = count
            documents += [count + d for d in docs]
            f.write(data)
            spans[owner][1] += n
            written[k] = (count + n, documents, spans)
    return written


# Corpus work as Tokenizer methods

class _CorpusWork:
    """Training on files and encoding a corpus to a flat array of ids."""

    @classmethod
    def train_files(cls, paths, vocab_size, *, workers=None, chunk_size=None, pattern="gpt2",
                    special_tokens=(), min_frequency=2, max_token_bytes=None, progress=False,
                    jsonl=None, text_field="text", tie_break="bytes"):
        """Train on UTF-8 files: large files are read in chunks cut where no
        pre-token can change and counted by `workers` workers (default: the
        CPUs): threads of this process with the compiled core, worker
        processes with the pure-Python one (never a re-run of the main
        script: no ``if __name__ == "__main__":`` needed).  The merges are
        exactly those of ``train([whole text of each file])``.

        ``jsonl=True``: every file is JSON lines, each record's `text_field`
        one document (the merges of ``train(texts)``).  A ``.jsonl`` or
        ``.ndjson`` file read as text (the default, ``jsonl=None``) warns;
        ``jsonl=False`` reads it as text quietly.  ``tie_break``: as for
        ``train``."""
        pattern, specials = cls._train_options(vocab_size, pattern, special_tokens, min_frequency,
                                               max_token_bytes, tie_break)
        progress = _reporter(progress)
        counts = _count_files(cls.core_class, paths, _CountOptions(pattern, specials, text_field),
                              workers, chunk_size, progress, jsonl)
        return cls._train_counts(counts, vocab_size, pattern, specials, min_frequency,
                                 max_token_bytes, progress, tie_break=tie_break)

    def encode_files(self, paths, out, *, dtype=None, eot=None, jsonl=None, text_field="text",
                     allowed_special=_NONE_ALLOWED, disallowed_special="all", workers=None,
                     chunk_size=None, progress=False, val_fraction=None, val_out=None, seed=0):
        """Encode a corpus into `out`, one flat little-endian array of ids
        (``uint16`` when every id fits, else ``uint32``; no header: what
        ``numpy.memmap(out, dtype=..., mode="r")`` reads), and write
        ``out + ".json"``, the sidecar: dtype, count, the tokenizer's sha256,
        where each document starts.  Returns the sidecar's dict.

        Each text file is a document; in JSON lines (``.jsonl``, ``.ndjson``,
        or every input with ``jsonl=True``) each record's `text_field` is one.
        The ids of a document are ``encode(text, allowed_special=...,
        disallowed_special=...)``, followed by the id of `eot` (a special
        token, or an id) when given.  An input may also be a byte range
        ``(path, start, end)`` from ``file_cuts``: a text file's document then
        starts at byte 0 and ends at its end.

        Large files are read in chunks of `chunk_size` bytes cut where no id
        can change (see ``file_cuts``) and encoded by `workers` workers:
        threads of this process when the core encodes without the GIL (the
        compiled one; default: the CPUs, at most one per MB of input), else
        processes (this one and workers - 1 more; default: the CPUs, at most
        one per 8 MB of input; they never re-run the main script); memory
        follows the chunk size and the workers, not the corpus.  The files are
        written atomically: a crash or Ctrl-C leaves no partial `out`.
        `progress`: True, or a callable (phase, done, total).

        ``val_fraction`` (between 0 and 1): whole documents go to a second
        array, `val_out` (default: `out` with its last "train" replaced by
        "val", ``train.bin`` -> ``val.bin``, else ``NAME.val.EXT``), with its
        own sidecar; the rest to `out`.  A document goes there when
        ``int.from_bytes(hashlib.blake2b(data, key=str(seed).encode("utf-8"),
        digest_size=8).digest(), "little") < int(val_fraction * 2**64)``
        (`data`: a text file's bytes, a record's text as UTF-8): about that
        fraction of the documents, the same choice on every run and with any
        workers, and equal documents always on the same side.  A corpus of
        one document is split by tokens instead: the last ``val_fraction`` of
        its ids go to `val_out` (the first ``int(n * (1 - val_fraction))``
        stay).  A side left empty is a ValueError, and so are two files of
        the set with one name; nothing is written then.  Returns the sidecar
        of `out`.

        >>> import os, tempfile, array
        >>> tok = Tokenizer.from_merges([(b"h", b"i")], special_tokens=["<|endoftext|>"])
        >>> d = tempfile.mkdtemp()
        >>> for name, text in [("a.txt", "hi hi"), ("b.txt", "ih")]:
        ...     with open(os.path.join(d, name), "w") as f:
        ...         _ = f.write(text)
        >>> meta = tok.encode_files([os.path.join(d, "a.txt"), os.path.join(d, "b.txt")],
        ...                         os.path.join(d, "train.bin"), eot="<|endoftext|>")
        >>> meta["dtype"], meta["count"], meta["documents"]
        ('uint16', 7, [0, 4])
        >>> with open(os.path.join(d, "train.bin"), "rb") as f:
        ...     array.array("H", f.read()).tolist()
        [256, 32, 256, 257, 105, 104, 257]
        """
        return _encode_files(self, paths, out, dtype, eot, jsonl, text_field, allowed_special,
                             disallowed_special, workers, chunk_size, progress, val_fraction,
                             val_out, seed)


# --------------------------------------------------------------------------
# The Tokenizer: its own API and the extras
# --------------------------------------------------------------------------


class Tokenizer(_TokenizerBase, _TiktokenMethods, _FileFormats, _CorpusWork):
    """A byte-level BPE tokenizer: a pre-tokenization pattern, mergeable tokens
    (bytes -> id), the ordered merges and special tokens (str -> id).

    Made by its class methods: train, train_files, train_from_counts,
    from_merges, load, from_file, from_gpt2, from_tiktoken, from_huggingface,
    get_encoding; or as tiktoken's Encoding, ``Tokenizer(name, pat_str=...,
    mergeable_ranks=..., special_tokens=...)``.

    >>> tok = Tokenizer.train("the cat sat on the mat. " * 10, 270, special_tokens=["<|end|>"])
    >>> ids = tok.encode("the cat<|end|>", allowed_special="all")
    >>> ids[-1] == tok.special_tokens["<|end|>"]
    True
    >>> tok.decode(ids)
    'the cat<|end|>'
    """

    # How an instance is made, whichever way in.  A new model (pattern, tokens,
    # merges, special tokens) is read or learned, then _create validates it and
    # builds its core (core_class(...)); or a core's C reader builds the core
    # straight from a file (_from_model, _load_plain).  Either way _from_core
    # makes the instance: the one place a Tokenizer's state is set.
    # Tokenizer(...) below is from_tiktoken under tiktoken's arguments, whose
    # state the new instance adopts (as a subclass's __init__ may call it through
    # super(), as tiktoken's allows); the registry (get_encoding) and unpickling
    # hand out _sharing copies of a model this process has built.

    def __init__(self, name=None, *, pat_str=None, mergeable_ranks=None, special_tokens=None,
                 explicit_n_vocab=None):
        """tiktoken's constructor, ``Encoding(name, *, pat_str, mergeable_ranks,
        special_tokens, explicit_n_vocab=None)`` (``Encoding`` is this class).
        A subclass may call it from its own ``__init__`` through ``super()``.

        >>> ranks = {bytes([b]): b for b in range(256)}
        >>> ranks[b"hi"] = 256
        >>> enc = Tokenizer("mine", pat_str=PATTERNS["gpt2"], mergeable_ranks=ranks,
        ...                 special_tokens={"<s>": 257})
        >>> enc.encode("hi<s>", allowed_special="all"), enc.name
        ([256, 257], 'mine')
        """
        built = type(self)._from_encoding_args(name, pat_str, mergeable_ranks, special_tokens,
                                               explicit_n_vocab)
        # called again (as tiktoken's may be): nothing of the old model stays, neither
        # its state nor what was made from it, nor the old model's place among the
        # models unpickling shares; a subclass's own attributes do stay
        _forget_built(self)
        for key in self._own_state(self):
            del self.__dict__[key]
        self.__dict__.update(built.__dict__)


Tokenizer._library_names = frozenset(
    name for c in Tokenizer.__mro__ for name in vars(c) if name[:1] == "_")
Encoding = Tokenizer  # tiktoken's name for it: Encoding(name, *, pat_str, ...)
count_pretokens = Tokenizer.count_pretokens


# --------------------------------------------------------------------------
# The command line: bpe train ..., bpe encode ... (python -m bpe_fallback ...)
# --------------------------------------------------------------------------


_FORMATS = {"native": "tokenizer.bpe", "tiktoken": "tokenizer.tiktoken",
            "huggingface": "tokenizer.json", "gpt2": "tokenizer-gpt2"}
_MEASURE_LIMIT = 64 << 20  # the summary's bytes per token: on at most this much text


class _Usage(Exception):
    """A bad invocation: one line on stderr, exit status `code`."""

    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


def _cli_parser():
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):
            raise _Usage(f"{message} (see {self.prog} --help)")

    p = Parser(prog="bpe", description="Train a byte-level BPE tokenizer on text files, encode "
               "a corpus into a flat array of token ids, decode one, or describe a tokenizer.",
               epilog="`bpe COMMAND --help` shows each command's options.  BPE_BACKEND=python "
                      "uses the pure-Python bpe_fallback; BPE_DEBUG=1 shows tracebacks.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    t = _cli_train_parser(sub)
    e = _cli_encode_parser(sub)
    _cli_decode_parser(sub)
    _cli_info_parser(sub)
    _cli_run_parser(sub)
    for c in (t, e):
        c.add_argument("-q", "--quiet", action="store_true",
                       help="no summary, no automatic progress")
        c.add_argument("--progress", action="store_true",
                       help="show progress on stderr even when it is not a terminal")
    return p


def _cli_train_parser(sub):
    """The options of `bpe train`."""
    t = sub.add_parser("train", help="train a tokenizer and write it",
                       description="Train a tokenizer on UTF-8 text files (each one document; - is "
                                   "standard input): Tokenizer.train_files with these options.")
    t.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="UTF-8 text files; - reads standard input")
    t.add_argument("--vocab-size", type=int, required=True, metavar="N",
                   help="256 bytes + merges + special tokens")
    t.add_argument("--pattern", default="gpt2", metavar="P",
                   help="pre-tokenization: a name (" + _PATTERN_NAMES + "; default gpt2) or "
                        "a regex")
    t.add_argument("--special", action="append", default=[], metavar="TOKEN",
                   help="a special token (repeat for several; their ids follow the merges), "
                        "or a named set: " + ", ".join(SPECIAL_TOKENS))
    t.add_argument("--min-frequency", type=int, default=2, metavar="N",
                   help="stop when the best pair occurs fewer than N times (default 2)")
    t.add_argument("--max-token-bytes", type=int, metavar="N", help="never learn a longer token")
    t.add_argument("--tie-break", choices=list(_TIE_BREAKS), default="bytes",
                   help="which of the most frequent pairs to merge: bytes (default), the greatest "
                        "pair of bytes; rustbpe, the smallest pair of ids (rustbpe's, nanochat's)")
    t.add_argument("--workers", type=int, metavar="N",
                   help="counting workers (default: the CPUs): threads with the compiled core, "
                        "processes with the pure-Python one")
    t.add_argument("--jsonl", action="store_true",
                   help="read every input as JSON lines, each record's text one document")
    t.add_argument("--text-field", default="text", metavar="FIELD",
                   help="with --jsonl: the field of a record that holds its text (default text)")
    t.add_argument("-o", "--output", metavar="OUT", help="default by format: " + ", ".join(
        f"{v}{'/' if k == 'gpt2' else ''} ({k})" for k, v in _FORMATS.items()))
    t.add_argument("--format", choices=list(_FORMATS), default="native",
                   help="native (default); tiktoken (+ OUT.json with the pattern and special "
                        "tokens); huggingface (tokenizer.json); gpt2 (vocab.json + merges.txt)")
    t.add_argument("--eval", action="append", default=[], metavar="FILE",
                   help="also report bytes per token on this held-out file (repeatable)")
    return t


def _cli_encode_parser(sub):
    """The options of `bpe encode`."""
    e = sub.add_parser("encode", help="encode a corpus into a flat array of ids",
                       description="Encode text files (each one document) or JSON lines (each "
                                   "record one) into OUT, a flat little-endian uint16/uint32 array "
                                   "of ids that numpy.memmap reads, and OUT.json, its sidecar: "
                                   "Tokenizer.encode_files.")
    e.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="text files, .jsonl/.ndjson files, - for standard input")
    e.add_argument("--tokenizer", "-t", required=True, metavar="T", help=_TOKENIZER_HELP)
    e.add_argument("-o", "--output", required=True, metavar="OUT", help="the array of ids, e.g. "
                                                                        "train.bin")
    e.add_argument("--eot", metavar="TOKEN", help="a special token to append after every document")
    e.add_argument("--allowed-special", action="append", default=[], metavar="TOKEN",
                   help="encode this special token's text as the special token (repeatable; `all` "
                        "for every one); other special-token text in the input is an error")
    e.add_argument("--ordinary", action="store_true",
                   help="encode special-token text in the input as ordinary text")
    e.add_argument("--dtype", choices=["auto", "uint16", "uint32"], default="auto",
                   help="auto (default): uint16 when every id fits")
    e.add_argument("--jsonl", action="store_true", help="read every input as JSON lines")
    e.add_argument("--text-field", default="text", metavar="FIELD",
                   help="the field of a JSON record that holds its text (default text)")
    _cli_bare_options(e)
    e.add_argument("--workers", type=int, metavar="N",
                   help="encoding workers (default: the CPUs, at most one per MB of input): "
                        "threads with the compiled core, processes with the pure-Python one")
    e.add_argument("--val-fraction", type=float, metavar="F",
                   help="write about this fraction of the documents (whole ones, chosen by a "
                        "seeded hash of their text; one document: its last F of ids) to a "
                        "second array beside OUT: train.bin -> val.bin, else OUT.val.bin")
    e.add_argument("--seed", type=int, default=0, metavar="S",
                   help="with --val-fraction: the seed of the choice (default 0)")
    return e


_TOKENIZER_HELP = ("a tokenizer file in any format bpe train writes (a .tiktoken file may be "
                   "gzipped), a directory of GPT-2's vocab.json and merges.txt, or the name of "
                   "an encoding: gpt2, r50k_base, p50k_base, cl100k_base, o200k_base (tiktoken's "
                   "cached files)")


_PATTERN_NAMES = ", ".join(PATTERNS)


def _cli_bare_options(c):
    """--pattern and --special: what a bare rank table (a .tiktoken file,
    GPT-2's files) lacks."""
    c.add_argument("--pattern", metavar="P",
                   help="the pattern of a tokenizer file that holds none (a .tiktoken file, "
                        "GPT-2's files): a name (" + _PATTERN_NAMES + ") or a regex")
    c.add_argument("--special", action="append", metavar="TOKEN=ID",
                   help="a special token of a tokenizer file that holds none (repeatable), or "
                        "a named set: " + ", ".join(SPECIAL_TOKENS))


def _cli_specials(values):
    """--special TOKEN=ID (repeatable) or a set's name: a dict; a set without
    fixed ids (its tokens take the ids after the vocabulary) given alone: its
    list; None when not given."""
    if not values:
        return None
    if len(values) == 1 and isinstance(SPECIAL_TOKENS.get(values[0]), list):
        return list(SPECIAL_TOKENS[values[0]])
    specials = {}
    for value in values:
        token, eq, i = value.rpartition("=")
        if eq and token:
            try:
                i = int(i)
            except ValueError:
                raise _Usage(f"--special {value}: the id after '=' must be an integer") from None
            added = {token: i}
        elif value in SPECIAL_TOKENS:
            added = SPECIAL_TOKENS[value]
            if not isinstance(added, dict):
                raise _Usage(f"--special {value}: the set {value} has no fixed ids (its tokens "
                             f"take the ids after the vocabulary): give it alone")
        else:
            raise _Usage(f"--special {value}: want TOKEN=ID, or a named set "
                         f"({', '.join(SPECIAL_TOKENS)})")
        for token, i in added.items():
            if specials.get(token, i) != i:
                raise _Usage(f"--special: {token} is given two ids, {specials[token]} and {i}")
            specials[token] = i
    return specials


def _cli_decode_parser(sub):
    """The options of `bpe decode`."""
    d = sub.add_parser("decode", help="decode an array of ids back to text",
                       description="Decode IDS, an array of ids that bpe encode wrote (its dtype "
                                   "read from IDS.json, the sidecar), back to text: to standard "
                                   "output, or to OUT.")
    d.add_argument("ids", metavar="IDS", help="the array of ids, e.g. train.bin")
    d.add_argument("--tokenizer", "-t", required=True, metavar="T", help=_TOKENIZER_HELP)
    d.add_argument("-o", "--output", metavar="OUT", help="write the text here (default: standard "
                                                          "output)")
    d.add_argument("--dtype", choices=["auto", "uint16", "uint32"], default="auto",
                   help="auto (default): the sidecar's, else uint16 when every id fits")
    _cli_bare_options(d)
    return d


def _cli_info_parser(sub):
    """The options of `bpe info`."""
    i = sub.add_parser("info", help="describe a tokenizer",
                       description="Show a tokenizer's vocabulary size, pattern, special tokens "
                                   "and longest tokens.")
    i.add_argument("tokenizer", metavar="T", help=_TOKENIZER_HELP)
    _cli_bare_options(i)
    return i

def _cli_backend():
    """The module the command runs on: the compiled `bpe` when importable."""
    want = _os.environ.get("BPE_BACKEND", "").strip().lower()
    if want == "python":
        return _sys.modules[__name__]
    if want not in ("", "cython"):
        raise _Usage(f"BPE_BACKEND must be 'python' or 'cython', not {want!r}", 1)
    try:
        import bpe
    except ImportError:
        bpe = None
    if want == "cython" and getattr(bpe, "BACKEND", None) != "cython":
        raise _Usage("BPE_BACKEND=cython, but the compiled bpe is not installed", 1)
    if bpe is not None and issubclass(bpe.Tokenizer, Tokenizer):
        return bpe
    return _sys.modules[__name__]


def _cli_error_text(e):
    if isinstance(e, OSError) and e.strerror:
        what = e.strerror[0].lower() + e.strerror[1:]
        return f"{e.filename}: {what}" if e.filename is not None else what
    if isinstance(e, MemoryError):
        return "out of memory"
    return str(e) or type(e).__name__


def main(argv=None):
    """The ``bpe`` command (also ``python -m bpe_fallback``): ``bpe train``
    and ``bpe encode``; see ``bpe --help``.  Returns the exit status: 0, 1
    for an error, 2 for a bad invocation; errors are one line on stderr.

    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "tok.bpe")
    >>> with open(out + ".txt", "w") as f:
    ...     _ = f.write("low lower lowest " * 20)
    >>> main(["train", out + ".txt", "--vocab-size", "260", "-o", out, "--quiet"])
    0
    >>> Tokenizer.load(out).merges[:2]
    [(b'o', b'w'), (b'l', b'ow')]
    >>> main(["train", out + ".txt", "--vocab-size", "lots"])  # one line on stderr
    2
    """
    args = _sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["run"]:  # the command's own arguments, warnings and errors
        return _cli_run(args[1:])
    status, message = 1, None
    with _warnings.catch_warnings():
        def show(message, category, filename, lineno, file=None, line=None):
            out = file or _sys.stderr
            text = _Spooled.named(" ".join(str(message).split()))
            out.write(("\r\x1b[K" if _isatty(out) else "") + f"bpe: warning: {text}\n")

        _warnings.showwarning = show
        try:
            args = _cli_parser().parse_args(argv)
            mod = _cli_backend()
            run = {"train": _cli_train, "encode": _cli_encode, "decode": _cli_decode,
                   "info": _cli_info}[args.command]
            return run(args, mod)
        except _Usage as e:
            status, message = e.code, str(e)
        except SystemExit as e:  # --help
            return e.code or 0
        except KeyboardInterrupt:
            status, message = 130, "interrupted"
        except BrokenPipeError:  # `bpe ... | head`
            try:
                _sys.stdout = open(_os.devnull, "w")
            except OSError:
                pass
            return 1
        except (ValueError, TypeError, OSError, ImportError, MemoryError, ArithmeticError,
                RuntimeError) as e:
            if _os.environ.get("BPE_DEBUG"):
                raise
            message = _Spooled.named(_cli_error_text(e))
    _sys.stderr.write(("\r\x1b[K" if _isatty(_sys.stderr) else "")
                     + f"bpe: error: {' '.join(message.split())}\n")
    _sys.stderr.flush()
    return status


def _check_input(path, what="file"):
    if path == "-":
        return
    if not _os.path.exists(path):
        raise _Usage(f"no such {what}: {path}", 1)
    if _os.path.isdir(path):
        raise _Usage(f"{path} is a directory, not a {what}", 1)
    mode = _os.stat(path).st_mode
    if not _stat.S_ISREG(mode):  # a FIFO would block the command, a device never end
        kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
        raise _Usage(f"{path}: {kind}, not a regular file"
                     + (" (- reads standard input)" if what == "file" else ""), 1)
    if not _os.access(path, _os.R_OK):
        raise _Usage(f"cannot read {path}: permission denied", 1)


def _check_output(out, inputs, directory=False, outputs=None):
    """Fail before any work if `out` cannot be written, or if a file written
    (`outputs`, default `out`) is a file read (`inputs`).  A directory that
    does not exist yet is fine where it can be made (_make_parent makes it)."""
    if directory and _os.path.exists(out) and not _os.path.isdir(out):
        raise _Usage(f"cannot write {out}/: it exists and is not a directory", 1)
    if not directory and _os.path.isdir(out):
        raise _Usage(f"cannot write {out}: it is a directory", 1)
    parent = out if directory and _os.path.isdir(out) else _os.path.dirname(_os.path.abspath(out))
    while not _os.path.lexists(parent) and _os.path.dirname(parent) != parent:
        parent = _os.path.dirname(parent)  # to be made: the nearest that exists must take it
    if not _os.path.isdir(parent):
        why = "does not exist" if not _os.path.exists(parent) else "is not a directory"
        raise _Usage(f"cannot write {out}: {parent} {why}", 1)
    if not _os.access(parent, _os.W_OK | _os.X_OK):
        raise _Usage(f"cannot write {out}: directory {parent} is not writable", 1)
    _check_not_input([out] if outputs is None else outputs, [p for p in inputs if p != "-"])


def _make_parent(out):
    """Make the directories `out` is to be written in (checked by _check_output)."""
    _os.makedirs(_os.path.dirname(_os.path.abspath(out)), exist_ok=True)


def _tokenizer_files(path):
    """The files a tokenizer path can make bpe read: the file and its
    sidecar, or a directory's tokenizer.json, vocab.json and merges.txt."""
    if _os.path.isdir(path):
        return [_os.path.join(path, n) for n in ("tokenizer.json", "vocab.json", "merges.txt")]
    return [path, path + ".json"]


def _check_counts(args, least):
    for flag, value, low in (("--workers", getattr(args, "workers", None), 1),
                             ("--min-frequency", getattr(args, "min_frequency", None), 0),
                             ("--max-token-bytes", getattr(args, "max_token_bytes", None), 1)):
        if value is not None and value < low:
            raise _Usage(f"{flag} must be at least {low}, got {value}")
    if least is not None:
        n = args.vocab_size
        if n < least:
            why = (f"256 bytes + {len(args.special)} special token{'s' * (len(args.special) != 1)}"
                   if args.special else "the 256 single bytes")
            raise _Usage(f"--vocab-size must be at least {least} ({why}), got {n}")
        if n > _MAX_ID:
            raise _Usage(f"--vocab-size must be at most {_MAX_ID:,} (ids are 32-bit), got {n:,}")


class _Phases:
    """A progress callback that remembers when each phase began and the
    number of distinct pre-tokens, and passes every call on to `show`."""

    def __init__(self, show):
        self.show, self.began, self.pretokens = show, {}, None

    def __call__(self, phase, done, total):
        self.began.setdefault(phase, _time.perf_counter())
        if phase == "pretokens":
            self.pretokens = done
        if self.show is not None:
            self.show(phase, done, total)


class _Spooled:
    """The inputs, with standard input (-) copied into a temporary file
    (which messages call <stdin>: see named)."""

    spools = []  # the temporary files of standard input, in this process

    def __init__(self, inputs):
        self.inputs, self.tmp = inputs, None

    @classmethod
    def named(cls, message):
        """A message with the temporary files' names replaced by <stdin>."""
        for tmp in cls.spools:
            message = message.replace(tmp, "<stdin>")
        for tmp, path in _Inflated.live.items():
            message = message.replace(tmp, path)
        return message

    def __enter__(self):
        import tempfile

        if self.inputs.count("-") > 1:
            raise _Usage("standard input (-) can be read only once")
        paths = list(self.inputs)
        if "-" in paths:
            fd, self.tmp = tempfile.mkstemp(prefix="bpe-stdin-", suffix=".txt")
            self.spools.append(self.tmp)
            with _os.fdopen(fd, "wb") as f:
                while True:
                    block = _sys.stdin.buffer.read(1 << 20)
                    if not block:
                        break
                    f.write(block)
            paths[paths.index("-")] = self.tmp
        return paths

    def __exit__(self, *exc):
        if self.tmp is not None:
            _os.unlink(self.tmp)
        return False


def _show_progress(args):
    return ProgressBar() if args.progress or (not args.quiet and _isatty(_sys.stderr)) else None


def _cli_train(args, mod):
    if len(args.special) == 1 and args.special[0] in SPECIAL_TOKENS:   # a set's name: its tokens
        args.special = list(SPECIAL_TOKENS[args.special[0]])
    least = 256 + len(args.special)
    _check_counts(args, least)
    out = args.output or _FORMATS[args.format]
    for path in args.inputs:
        _check_input(path)
    for path in args.eval:
        _check_input(path, "eval file")
    written = {"tiktoken": [out, out + ".json"], "gpt2": [_os.path.join(out, "vocab.json"),
               _os.path.join(out, "merges.txt")]}.get(args.format, [out])
    _check_output(out, args.inputs + args.eval, directory=args.format == "gpt2", outputs=written)
    options = dict(pattern=args.pattern, special_tokens=args.special,
                   min_frequency=args.min_frequency, max_token_bytes=args.max_token_bytes,
                   tie_break=args.tie_break)
    mod.Tokenizer.train("", least, **options)  # the library checks the options first (instant)
    workers = args.workers or _os.cpu_count() or 1
    phases = _Phases(_show_progress(args))
    with _Spooled(args.inputs) as paths, _Inflated(paths) as paths:  # sizes: inflated ones
        size = sum(_os.path.getsize(p) for p in paths)
        start = _time.perf_counter()
        tok = mod.Tokenizer.train_files(paths, args.vocab_size, workers=workers, progress=phases,
                                        jsonl=True if args.jsonl else None,
                                        text_field=args.text_field, **options)
        took = _time.perf_counter() - start
        _make_parent(out)
        written = _save_as(tok, out, args.format)
        if args.quiet:
            return 0
        rows = _train_summary(args, mod, tok, paths, phases, size, start, took)
    rows.append(("wrote", f"{', '.join(written)} ({args.format})"))
    for key, value in rows:
        print(f"{key:<12} {value}")
    for line in _how_to_load(tok, out, args.format, mod):
        print(line)
    return 0


def _train_summary(args, mod, tok, paths, phases, size, start, took):
    """The rows of bpe train's summary: what was trained on, what was
    learned, how long it took, and the compression on the training text and
    on each --eval file."""
    least = 256 + len(args.special)
    nbytes, ntokens, whole = _measure(tok, paths, jsonl=args.jsonl, text_field=args.text_field)
    evals = [(path, *_measure(tok, [path])) for path in args.eval]
    names = ["standard input" if p == "-" else p for p in args.inputs]
    names = names[:3] + ([f"... ({len(names) - 3} more)"] if len(names) > 3 else [])
    n_target, n_merges = args.vocab_size - least, len(tok.merges)
    rows = [("backend", mod.BACKEND),
            ("corpus", f"{', '.join(names)} ({_fmt_bytes(size)}"
                       f"{f', {len(paths)} files' if len(paths) > 1 else ''})")]
    if phases.pretokens is not None:
        rows.append(("pre-tokens", f"{phases.pretokens:,} distinct"))
    stop = ""
    if n_merges < n_target:
        stop = (f"; stopped early: no pair occurs {args.min_frequency} or more times"
                if args.min_frequency > 0 else "; stopped early: no pair left")
        stop += f" within {args.max_token_bytes} bytes" if args.max_token_bytes else ""
    rows.append(("merges", f"{n_merges:,} of {n_target:,} learned; vocab_size {tok.vocab_size:,} "
                           f"({len(args.special)} special{'s' * (len(args.special) != 1)}){stop}"))
    merging = phases.began.get("pretokens")
    if merging is not None:
        rows.append(("time", f"{_fmt_seconds(took)}: {_fmt_seconds(merging - start)} counting, "
                             f"{_fmt_seconds(start + took - merging)} merging"))
    else:
        rows.append(("time", _fmt_seconds(took)))

    def ratio(b, t):
        return f"{b / t:.2f} bytes per token" if t else "no tokens"

    part = "the training text" if whole else f"the first {_fmt_bytes(nbytes)} of the training text"
    if args.jsonl:
        part = part.replace("the training text", "the records' texts")
    rows.append(("compression", f"{ratio(nbytes, ntokens)} on {part} ({ntokens:,} tokens)"))
    for path, b, t, full in evals:
        rows.append(("eval", f"{ratio(b, t)} on {path} ({t:,} tokens"
                             f"{'' if full else f', first {_fmt_bytes(b)}'})"))
    made = sorted((t for i, t in tok.vocab.items() if 256 <= i < 256 + n_merges),
                  key=lambda t: -len(t))[:5]
    if made:
        rows.append(("longest", ", ".join(f"{t.decode('utf-8', 'backslashreplace')!r} ({len(t)})"
                                          for t in made)))
    return rows


def _measure(tok, paths, limit=_MEASURE_LIMIT, jsonl=False, text_field="text"):
    """(bytes, tokens, whole) of encoding the files (with jsonl, the texts of
    their records), specials as their ids, stopping at a line end after
    `limit` bytes of file.  The text is read and encoded in pieces of about
    a megabyte cut where no id changes (file_cuts' rule): memory holds a
    piece and its ids, never the corpus's."""
    cut_re = _LINE_CUT if jsonl else _cut_kind(tok._pattern, tuple(tok._specials))
    nbytes = ntokens = read = 0
    for path in paths:
        with open(path, "rb") as f:
            size = _os.fstat(f.fileno()).st_size
            end = size if read + size <= limit else _line_end_before(f, limit - read)
            for a, b in _ranges(f, end, 0, end, 1 << 20, cut_re):
                f.seek(a)
                data = f.read(b - a)
                texts = (read_jsonl(data, text_field=text_field, name=path, offset=a) if jsonl
                         else [data.decode("utf-8", "replace")])
                for text in texts:
                    nbytes += len(text.encode("utf-8", "replace")) if jsonl else 0
                    ntokens += len(tok.encode(text, allowed_special="all"))
                nbytes += 0 if jsonl else len(data)
        read += end
        if end < size:
            return nbytes, ntokens, False
    return nbytes, ntokens, True


def _line_end_before(f, pos):
    """The offset just after the last line feed before `pos` (0 if none)."""
    step = 1 << 20
    while pos > 0:
        start = max(0, pos - step)
        f.seek(start)
        at = f.read(pos - start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        pos = start
    return 0


def _save_as(tok, out, fmt):
    """Write `tok` in format `fmt`; the paths written."""
    import hashlib
    import json

    if fmt == "native":
        tok.save(out)
        return [out]
    if fmt == "huggingface":
        tok.save_huggingface(out)
        return [out]
    if fmt == "gpt2":
        tok.save_gpt2(out)
        return [_os.path.join(out, "vocab.json"), _os.path.join(out, "merges.txt")]
    # a .tiktoken file holds the ranks only: the pattern and the special tokens go to a
    # sidecar, with the file's sha256 for load_tiktoken_bpe(path, expected_hash=...)
    tok.save_tiktoken(out)
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    meta = {"pattern": tok.pattern, "special_tokens": tok.special_tokens, "sha256": digest}
    _atomic_write(out + ".json", json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
    return [out, out + ".json"]


def _how_to_load(tok, out, fmt, mod):
    if fmt == "native":
        return []
    if fmt == "huggingface":
        return ["load with:", f"    tokenizers.Tokenizer.from_file({out!r})"]
    if fmt == "gpt2":
        extra = "" if tok.pattern == PATTERNS["gpt2"] else f", pattern={_pattern_name(tok.pattern)}"
        return ["load with:", f"    bpe.Tokenizer.from_gpt2({_os.path.join(out, 'vocab.json')!r}, "
                              f"{_os.path.join(out, 'merges.txt')!r}{extra})"]
    name = _os.path.splitext(_os.path.basename(out))[0] or "tokenizer"
    lines = [
        f"load with tiktoken (the pattern and special tokens are in {out}.json):",
        "    import json, tiktoken",
        "    from tiktoken.load import load_tiktoken_bpe",
        f"    meta = json.load(open({out + '.json'!r}, encoding='utf-8'))",
        f"    ranks = load_tiktoken_bpe({out!r}, expected_hash=meta['sha256'])",
        f"    enc = tiktoken.Encoding({name!r}, pat_str=meta['pattern'], mergeable_ranks=ranks,",
        "                            special_tokens=meta['special_tokens'])",
    ]
    alike = [(a, b) for a in tok.special_tokens for b in tok.special_tokens
             if a != b and b.startswith(a)]
    if alike:
        lines.append(f"note: special tokens {alike[0][0]!r} and {alike[0][1]!r} start alike; "
                     "tiktoken does not match them longest first, so it encodes such text "
                     "differently")
    return lines


def _pattern_name(pattern):
    """A pattern as Python source: its name where it has one (a regex that
    is a bare word, as a group: the API would read it as a name)."""
    name = next((name for name, rx in PATTERNS.items() if rx == pattern), None)
    if name is not None:
        return repr(name)
    if isinstance(pattern, str) and _NAME_LIKE.fullmatch(pattern):
        return repr(f"(?:{pattern})")
    return repr(pattern)


def _describe_pattern(pattern):
    """bpe info's pattern: "regex ...", or "pipeline: " and its steps."""
    def shown(rx):
        return rx if rx.isprintable() and rx.strip() == rx and rx else repr(rx)

    if not isinstance(pattern, Pipeline):
        return f"regex {shown(pattern)}"
    steps = [f"normalize {form}" for form in pattern.normalizers]
    steps += [f"split by the regex {shown(rx)}" for rx in pattern.splits]
    return "pipeline: " + "; then ".join(steps)


def _cli_tokenizer(spec, pattern, mod, special=None):
    """-t T: a tokenizer file in any format, a directory of GPT-2's files, or
    the name of one of tiktoken's encodings (get_encoding); `pattern` and
    `special` (--pattern, --special) complete a file that holds none."""
    specials = _cli_specials(special)
    if not _os.path.exists(spec):
        if spec in _ENCODINGS:
            if pattern is not None:
                raise _Usage(f"--pattern: encoding {spec} has its own pattern")
            if specials is not None:
                raise _Usage(f"--special: encoding {spec} has its own special tokens")
            return mod.get_encoding(spec)
        raise _Usage(f"no such tokenizer: {spec} (a tokenizer file, a directory of GPT-2's "
                     f"vocab.json and merges.txt, or one of {', '.join(_ENCODINGS)})", 1)
    if not _os.path.isdir(spec):
        _check_input(spec, "tokenizer")
    try:
        return mod.Tokenizer.from_file(spec, pattern=pattern, special_tokens=specials)
    except ValueError:
        if _looks_like_gpt2_vocab(spec):
            raise ValueError(f"{spec}: a GPT-2 vocab.json (token -> id) holds no merges: pass "
                             f"the directory that holds it and its merges.txt, or load both "
                             f"with Tokenizer.from_gpt2(vocab_json, merges_txt)") from None
        raise


def _looks_like_gpt2_vocab(path):
    """Whether a file is a JSON object of token -> int, as GPT-2's vocab.json."""
    import json

    if _os.path.isdir(path) or _os.path.getsize(path) > _MAX_FILE_BYTES:
        return False
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError, RecursionError):
        return False
    return (isinstance(raw, dict) and len(raw) > 0
            and all(isinstance(v, int) for v in raw.values()))


def _val_fraction(args):
    """--val-fraction, checked; None when not given."""
    f = args.val_fraction
    if f is not None and not 0 < f < 1:  # (nan is neither)
        raise _Usage(f"--val-fraction must be between 0 and 1 (exclusive), got {f}")
    return f


def _cli_encode(args, mod):
    _check_counts(args, None)
    val_fraction = _val_fraction(args)
    for path in args.inputs:
        _check_input(path)
    read = args.inputs + _tokenizer_files(args.tokenizer)
    _check_output(args.output, read, outputs=[args.output, args.output + ".json"])
    val_out = None
    if val_fraction is not None:
        val_out = _val_path(args.output)
        _check_output(val_out, read, outputs=[val_out, val_out + ".json"])
    tok = _cli_tokenizer(args.tokenizer, args.pattern, mod, args.special)
    allowed = "all" if "all" in args.allowed_special else set(args.allowed_special)
    options = dict(dtype=None if args.dtype == "auto" else args.dtype, eot=args.eot,
                   jsonl=True if args.jsonl else None, text_field=args.text_field,
                   allowed_special=allowed, disallowed_special=() if args.ordinary else "all",
                   workers=args.workers, val_fraction=val_fraction, seed=args.seed)
    for path in [args.output] + ([val_out] if val_out is not None else []):
        _make_parent(path)
    with _Spooled(args.inputs) as paths:
        size = sum(_os.path.getsize(p) for p in paths)
        start = _time.perf_counter()
        try:
            meta = tok.encode_files(paths, args.output, progress=_show_progress(args) or False,
                                    **options)
        except ValueError as e:
            if "disallowed special token" not in str(e):
                raise
            # (the first line of the message, tiktoken's: "... special token '<|x|>'.")
            token = str(e).splitlines()[0].partition("disallowed special token ")[2][:-1]
            found = f"text contains the disallowed special token {token}"
            raise ValueError(f"{found}: pass --allowed-special TOKEN (or all) to encode it as "
                             f"the special token, or --ordinary to encode it as text") from None
        took = _time.perf_counter() - start
    if args.quiet:
        return 0
    n, docs = meta["count"], len(meta["documents"])
    size = sum(r["end"] - r["start"] for r in meta["inputs"])  # a gzip file's once inflated
    val = None
    if val_out is not None:
        import json

        with open(val_out + ".json", encoding="utf-8") as f:
            val = json.load(f)
        n, docs = n + val["count"], docs + len(val["documents"])
    rows = [("backend", mod.BACKEND),
            ("tokenizer", f"{args.tokenizer} (vocab_size {tok.vocab_size:,})"),
            ("inputs", f"{len(paths)} file{'s' * (len(paths) != 1)} ({_fmt_bytes(size)}), "
                       f"{docs:,} document{'s' * (docs != 1)}"),
            ("ids", f"{n:,} {meta['dtype']}"
                    + (f" ({size / n:.2f} bytes per id)" if n else "")
                    + f" in {_fmt_seconds(took)}"
                    + (f" ({size / took / 1e6:,.1f} MB/s)" if took >= 0.1 else "")),
            ("wrote", f"{args.output} ({_fmt_bytes(_os.path.getsize(args.output))}), "
                      f"{args.output}.json")]
    if val is not None:
        rows.insert(-1, ("split", f"one document, split by tokens: {meta['count']:,} ids to "
                                  f"{args.output}, {val['count']:,} to {val_out}"
                         if meta["split"]["by"] == "tokens" else
                         f"{len(meta['documents']):,} documents ({meta['count']:,} ids) "
                         f"to {args.output}, {len(val['documents']):,} "
                         f"({val['count']:,} ids) to {val_out}"))
        rows.append(("wrote", f"{val_out} ({_fmt_bytes(_os.path.getsize(val_out))}), "
                              f"{val_out}.json"))
    for key, value in rows:
        print(f"{key:<12} {value}")
    print("load with:")
    for path in [args.output] + ([val_out] if val is not None else []):
        print(f"    numpy.memmap({path!r}, dtype=numpy.{meta['dtype']}, mode='r')")
    return 0


def _cli_decode(args, mod):
    import array

    _check_input(args.ids)
    tok = _cli_tokenizer(args.tokenizer, args.pattern, mod, args.special)
    dtype, byteorder = args.dtype, "little"
    sidecar = args.ids + ".json"
    if _os.path.isfile(sidecar):
        meta = _json(_read_text(sidecar), sidecar)
        if dtype == "auto":
            dtype = meta.get("dtype") if isinstance(meta, dict) else None
        byteorder = meta.get("byteorder", "little") if isinstance(meta, dict) else None
        if dtype not in _DTYPES or byteorder not in ("little", "big"):
            raise ValueError(f"{sidecar}: not the sidecar of an array of ids (expected "
                             f"\"dtype\": \"uint16\" or \"uint32\")")
        _check_same_model(meta, tok, args.tokenizer, args.ids)
    elif dtype == "auto":
        dtype = _ids_dtype(tok, None)
    itemsize = _DTYPES[dtype]
    size = _os.path.getsize(args.ids)
    if size % itemsize:
        raise ValueError(f"{args.ids}: {size:,} bytes is not a whole number of {dtype} ids")
    code = next(c for c in "HIL" if array.array(c).itemsize == itemsize)
    if args.output is not None:
        _check_output(args.output, [args.ids, args.ids + ".json",
                                    *_tokenizer_files(args.tokenizer)])
        directory = _os.path.dirname(_os.path.abspath(args.output))
        _make_parent(args.output)
        fd, tmp = _open_temporary(directory, _os.path.basename(args.output))
        sink = open(fd, "wb", closefd=False)
    else:
        fd = tmp = None
        sink = _sys.stdout.buffer
    written = 0
    try:
        with open(args.ids, "rb") as f:
            for block in iter(lambda: f.read(itemsize << 18), b""):
                ids = array.array(code, block)
                if byteorder != _sys.byteorder:
                    ids.byteswap()
                try:
                    data = tok.decode_bytes(ids.tolist())
                except ValueError as e:
                    raise ValueError(f"{args.ids}: {e}") from None
                sink.write(data)
                written += len(data)
        sink.flush()
        if fd is not None:
            _os.fsync(fd)
            sink.close()
            _publish(fd, tmp, _os.path.abspath(args.output))
            tmp = None
    except BaseException:
        if tmp is not None:
            _unlink_quietly(tmp)
        raise
    finally:
        if fd is not None:
            sink.close()
            _os.close(fd)
    if args.output is not None:
        print(f"decoded {size // itemsize:,} {dtype} ids to {args.output} ({_fmt_bytes(written)})")
    return 0


def _cli_info(args, mod):
    tok = _cli_tokenizer(args.tokenizer, args.pattern, mod, args.special)
    specials = tok.special_tokens
    special_ids = set(specials.values())
    n_merges = len(tok.merges)
    named = next((name for name, rx in PATTERNS.items() if rx == tok.pattern), None)
    pattern = _describe_pattern(tok.pattern)
    rows = [("tokenizer", args.tokenizer),
            ("vocab_size", f"{tok.vocab_size:,} ({tok.vocab_size - len(specials):,} tokens: "
                           f"{n_merges:,} merges; {len(specials):,} special "
                           f"token{'s' * (len(specials) != 1)})"),
            ("pattern", (f"name {named}, the " if named else "") + pattern),
            ("pretokenizer", tok.pretokenizer + (" (compiled from the pattern)"
                                                 if tok.pretokenizer == "native" and named
                                                 not in ("gpt2", "cl100k", "o200k", "words")
                                                 else ""))]
    shown = sorted(specials.items(), key=lambda kv: kv[1])
    text = ", ".join(f"{name!r} {i}" for name, i in shown[:12])
    rows.append(("specials", (text + (f", ... ({len(shown) - 12} more)" if len(shown) > 12
                                      else "")) if shown else "none"))
    longest = sorted(((-len(t), i, t) for i, t in tok.vocab.items() if i not in special_ids))[:5]
    rows.append(("longest", ", ".join(f"{t.decode('utf-8', 'backslashreplace')!r} ({len(t)})"
                                      for _, _, t in longest)))
    for key, value in rows:
        print(f"{key:<12} {value}")
    return 0


_RUN_USAGE = "usage: bpe run COMMAND [ARGS...] | bpe run -m MODULE [ARGS...]"
_RUN_HELP = """Run a program written for tiktoken on this library, unchanged: COMMAND (a
console script of this Python's packages, else a Python script on PATH or at a
path) or MODULE (as python -m), in this process after patch_tiktoken(), with
ARGS.  The exit status is the program's; a command not found exits 127."""


def _cli_run_parser(sub):
    """`bpe run` in `bpe --help`; _cli_run reads its own arguments."""
    return sub.add_parser(
        "run", help="run a command written for tiktoken on this library",
        description=_RUN_HELP, usage=_RUN_USAGE[len("usage: "):])


def _cli_run(argv):
    """``bpe run COMMAND ARGS...``: the program COMMAND, unchanged, on this
    library under tiktoken's names.  COMMAND is a console script of this
    Python's packages (its entry point), else a Python script on PATH or at a
    path; ``-m MODULE`` a module, as ``python -m``.  It runs in this process
    after patch_tiktoken(), with sys.argv set, and its exit status is bpe's
    (SystemExit's, an entry point's return value, 1 after an uncaught
    exception with Python's traceback).  Not found: one line, status 127."""
    def fail(message, code):
        _sys.stderr.write(f"bpe: error: {message}\n")
        return code

    if not argv or argv[0] in ("-h", "--help"):
        _sys.stdout.write(f"{_RUN_USAGE}\n\n{_RUN_HELP}\n")
        return 0 if argv else 2
    if argv[0] == "-m":
        if len(argv) < 2:
            return fail(f"-m needs a module name ({_RUN_USAGE})", 2)
        run, where, args = _run_module(argv[1]), argv[1], argv[2:]
    else:
        run, where = _run_target(argv[0])
        if run is None:
            return fail(where, 127)
        args = argv[1:]
    try:
        mod = _cli_backend()
    except _Usage as e:
        return fail(str(e), e.code)
    mod.patch_tiktoken()
    _sys.argv[:] = [where, *args]
    try:
        raise SystemExit(run())
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        _sys.stderr.write(f"{e.code}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:  # noqa: BLE001 - the command's own error, as Python shows it
        import traceback

        traceback.print_exc()
        return 1


def _run_module(name):
    def run():
        import runpy

        runpy.run_module(name, run_name="__main__", alter_sys=True)

    return run


def _run_script(path):
    def run():
        import runpy

        _sys.path[0:1] = [_os.path.dirname(_os.path.abspath(path))]  # as `python PATH` does
        runpy.run_path(path, run_name="__main__")

    return run


def _run_target(name):
    """(a function running command `name`, the path or name it runs as), or
    (None, why there is no such command)."""
    import shutil

    if _os.sep in name or (_os.altsep and _os.altsep in name):
        if not _os.path.isfile(name):
            return None, f"{name}: no such file"
        return _run_script(name), name
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="console_scripts") if ep.name == name]
    if found:  # the wrapper pip writes: sys.exit(entry_point())
        return (lambda: found[0].load()()), shutil.which(name) or name
    path = shutil.which(name)
    if path is None:
        return None, (f"{name}: command not found (neither a console script of this Python's "
                      f"packages nor a program on PATH)")
    try:
        with open(path, "rb") as f:
            head = f.readline(256)
    except OSError as e:
        return None, f"{path}: {_cli_error_text(e)}"
    if not (head.startswith(b"#!") and b"python" in head):
        return None, (f"{path} is not a Python script: bpe run runs Python programs in this "
                      f"process, where the patch applies")
    return _run_script(path), path


if __name__ == "__main__":
    # run as the module everyone imports (worker processes find its functions by that name)
    import importlib

    _sys.exit(importlib.import_module(__spec__.name if __spec__ is not None else
                                     _os.path.splitext(_os.path.basename(__file__))[0]).main())
