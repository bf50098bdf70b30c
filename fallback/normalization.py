"""Unicode normalization (NFC, NFD, NFKC, NFKD) as Hugging Face tokenizers
applies it, from its own data (probed by tools/normalization_tables.py), whatever Python's
unicodedata holds."""

from __future__ import annotations as _annotations

import threading as _threading

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
    for m in _moving_runs(runs, text):
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


_ASCII_BLOCK = 4096   # characters: a block of ASCII text is skipped in one step


def _moving_runs(runs, text):
    """runs(text)'s matches, looked for only in the blocks that hold a
    non-ASCII character (no ASCII character ever moves, so no run starts in
    or reaches into an ASCII block): mostly-ASCII text costs an isascii()
    a block instead of the class test a character."""
    n, a = len(text), 0
    while a < n:
        if text[a:a + _ASCII_BLOCK].isascii():
            a += _ASCII_BLOCK
            continue
        b = a + _ASCII_BLOCK
        while b < n and not text[b:b + _ASCII_BLOCK].isascii():
            b += _ASCII_BLOCK
        yield from runs(text, a, min(b, n))
        a = b


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
