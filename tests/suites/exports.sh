#!/bin/sh
# exports.sh OOMDOC [LIBRARY] - liboomdoc.so exports the public API and nothing else: the
# functions defined in its dynamic symbol table (nm -D --defined-only) must be exactly
# those whose declaration in include/oomdoc/*.h carries OD_API. Any other symbol (an
# internal od_ helper, a subcommand, jansson or zlib linked in statically) fails, and so
# does a public declaration the library does not define. LIBRARY defaults to the
# liboomdoc.so.0 built beside OOMDOC.
dir=$(dirname "$1"); [ "$dir" = . ] && dir=build/rel  # ./oomdoc is a copy of build/rel/oomdoc
lib=${2:-$dir/liboomdoc.so.0}
if ! [ -f "$lib" ]; then
    # make check builds the library for plain builds only (a sanitizer build's cannot be
    # loaded by python, so none is made): nothing to list there.
    [ -z "$2" ] && [ "$dir" != build/rel ] && { echo "exports: $dir has no liboomdoc.so.0: skipped"; exit 0; }
    echo "FAIL exports: no $lib"; exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# The public API as the headers declare it: OD_API, then a declaration up to the first
# opening parenthesis, whose last word is the function's name (a declaration may wrap).
cat include/oomdoc/*.h | tr '\n' ' ' | grep -o 'OD_API [^;{(]*(' |
    sed 's/ *($//; s/.*[ *]//' | grep '^od_' | sort -u >"$tmp/want"
[ -s "$tmp/want" ] || { echo "exports: no OD_API declaration found in include/oomdoc/"; exit 1; }
# Every function an installed header declares is public: one without OD_API would be
# hidden in the library and fail its callers at load time.
bare=$(grep -h -E '^[a-z][a-z0-9_ ]*[ *]od_[a-z0-9_]+\(' include/oomdoc/*.h | grep -v -E '^(OD_API|static|typedef) ')
[ -z "$bare" ] || { echo "FAIL exports: declared in include/oomdoc/ without OD_API:"; echo "$bare"; status=1; }

# Defined dynamic symbols; a sanitizer build's runtime hooks are not the library's own.
nm -D --defined-only "$lib" | awk '{print $NF}' |
    grep -v -e '^__asan' -e '^__ubsan' -e '^__sanitizer' -e '^__lsan' -e '^_init$' -e '^_fini$' |
    sort -u >"$tmp/got"

extra=$(comm -13 "$tmp/want" "$tmp/got")
missing=$(comm -23 "$tmp/want" "$tmp/got")
[ -z "$extra" ] || { echo "FAIL exports: $lib exports symbols that are not public API:" $extra; status=1; }
[ -z "$missing" ] || { echo "FAIL exports: public API not exported by $lib:" $missing; status=1; }
[ "$status" = 0 ] && echo "exports: $lib exports $(wc -l <"$tmp/got") symbols, exactly the OD_API declarations of include/oomdoc/*.h"
exit $status
