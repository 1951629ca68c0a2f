# bash completion for oomdoc. Source it, or install as
# /usr/share/bash-completion/completions/oomdoc. Subcommands and options are read from
# the binary's own --help, so the completion always matches the build.
_oomdoc()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        local cmds
        cmds=$("${COMP_WORDS[0]}" --help 2>/dev/null | awk '/^Commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{on=0}')
        COMPREPLY=($(compgen -W "$cmds help --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    if [ "$cmd" = help ]; then
        COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null | awk '/^Commands:/{on=1;next} on&&/^  [a-z]/{print $1}')" -- "$cur"))
        return
    fi
    if [[ "$cur" == -* ]]; then
        local opts
        opts=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _oomdoc oomdoc
