# bash completion for oomdoc (and ./oomdoc in a build tree). Source it, or install it as
# /usr/share/bash-completion/completions/oomdoc (`make install` does).
#
# Everything is read from the binary's own --help, so the completion matches the build:
# the subcommands from `oomdoc --help`, each subcommand's options from the option lines
# of `oomdoc CMD --help` (only the option column, never an option named in prose), and an
# option's values from its description when that is a list ("fp32, amp-bf16 (default),
# amp-fp16, bf16", the --gpu names). Anything else completes file names.

# _oomdoc_help PROG CMD MODE [OPT]: MODE=opts prints CMD's options; MODE=values prints
# OPT's values (nothing when its description is not a list); MODE=takes prints "1" when
# OPT takes an argument.
_oomdoc_help()
{
    "$1" "$2" --help 2>/dev/null | awk -v mode="$3" -v want="$4" '
        function flush(   d, n, i, p, vals, nv) {
            if (spec == "") return
            n = split(spec, w, /[ ,]+/)
            hit = 0; arg = 0
            for (i = 1; i <= n; i++) {
                if (w[i] ~ /^--[a-z][a-z0-9-]*$/) {
                    if (mode == "opts") print w[i]
                    if (w[i] == want) { hit = 1; arg = (i < n && w[i + 1] !~ /^-/) }
                }
            }
            if (hit && mode == "takes" && arg) print 1
            if (hit && mode == "values") {
                d = desc
                sub(/^[a-z]+: /, "", d)
                while (gsub(/\([^()]*\)/, "", d)) ;
                n = split(d, p, ",")
                nv = 0
                for (i = 1; i <= n; i++) {
                    gsub(/^ +| +$/, "", p[i])
                    if (p[i] !~ /^[a-z0-9][a-z0-9._-]*$/) break
                    vals[++nv] = p[i]
                }
                if (nv >= 2) for (i = 1; i <= nv; i++) print vals[i]
            }
            spec = ""; desc = ""
        }
        /^Example/ { exit }
        # A section heading that names an option and its value: "Training (--task train, ..."
        /^[A-Z][a-z]* \(--[a-z][a-z0-9-]* [a-z]/ {
            flush()
            h = $0; sub(/^[^(]*\(/, "", h); split(h, hw, /[ ,):]+/)
            if (mode == "opts") print hw[1]
            if (hw[1] == want && mode == "takes") print 1
            if (hw[1] == want && mode == "values") print hw[2]
            next
        }
        /^  (-[A-Za-z], )?--[a-z]/ {
            flush()
            line = substr($0, 3)
            gap = index(line, "  ")
            if (gap) { spec = substr(line, 1, gap - 1); desc = substr(line, gap) }
            else { spec = line; desc = "" }
            gsub(/^ +/, "", desc)
            next
        }
        /^    +[^ ]/ && spec != "" { l = $0; gsub(/^ +/, "", l); desc = desc " " l; next }
        { flush() }
        END { flush() }'
}

_oomdoc()
{
    local prog cur prev cmd vals
    prog=${COMP_WORDS[0]}
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()
    local cmds
    cmds=$("$prog" --help 2>/dev/null | awk '/^Commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{on=0}' | tr '\n' ' ')
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$cmds help --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    if [ "$cmd" = help ]; then
        [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        return
    fi
    case " $cmds " in *" $cmd "*) ;; *) return ;; esac
    if [[ "$prev" == --* ]] && [ -n "$(_oomdoc_help "$prog" "$cmd" takes "$prev")" ]; then
        # --gpu takes the names of plan's GPU table in every subcommand.
        [ "$prev" = --gpu ] && vals=$(_oomdoc_help "$prog" plan values --gpu) ||
            vals=$(_oomdoc_help "$prog" "$cmd" values "$prev")
        if [ -n "$vals" ]; then
            COMPREPLY=($(compgen -W "$vals" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_oomdoc_help "$prog" "$cmd" opts | sort -u)" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _oomdoc oomdoc ./oomdoc
