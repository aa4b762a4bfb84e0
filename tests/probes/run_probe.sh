#!/usr/bin/env bash
# Cross-compiler bit probe (CTest probe.cross_compiler_bits).
# Builds tests/probes/probe.cpp with every available configuration below (each with
# -std=c++20 -ffp-contract=off -fopenmp), runs each build (and the first one also with
# 3 OpenMP threads), and fails if any output differs from the first. A compiler that is
# not installed, or cannot build an OpenMP program, is skipped with a note; at least two
# builds must run. Usage: run_probe.sh <project root> <work dir>
set -u
root=${1:?project root}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
src="$root/tests/probes/probe.cpp"
flags=(-std=c++20 -ffp-contract=off -fopenmp -I"$root")

configs=("g++ -O0" "g++ -O2" "clang++ -O0" "clang++ -O2" "g++ -O3 -march=native")
# probe.cpp includes the baseline kernel sources; the instruction-set variants are
# separate objects with the flags kernels/CMakeLists.txt gives them (the probe's
# kernels dispatch to them at run time, so the widest path this CPU has is probed).
isa_objects=("activation_avx2.cpp:-mavx2 -mfma"
             "activation_avx512.cpp:-mavx2 -mfma -mavx512f -mavx512dq -mavx512bw -mavx512vl"
             "dropout_avx2.cpp:-mavx2 -mfma"
             "dropout_avx512.cpp:-mavx2 -mfma -mavx512f -mavx512dq -mavx512bw -mavx512vl"
             "softmax_avx2.cpp:-mavx2 -mfma"
             "softmax_avx512.cpp:-mavx2 -mfma -mavx512f -mavx512dq -mavx512bw -mavx512vl")
omp_ok() {  # does this compiler build and run an OpenMP program?
  printf '#include <omp.h>\nint main(){return omp_get_max_threads()>0?0:1;}\n' > "$work/omp_check.cpp"
  "$1" -fopenmp "$work/omp_check.cpp" -o "$work/omp_check_$1" >/dev/null 2>&1 && "$work/omp_check_$1"
}

declare -A usable
builds=0
ref=""
status=0
for cfg in "${configs[@]}"; do
  read -r cxx opts <<<"$cfg"
  if [[ -z ${usable[$cxx]+x} ]]; then
    if ! command -v "$cxx" >/dev/null 2>&1; then
      usable[$cxx]=0; echo "probe: $cxx not installed, skipped"
    elif ! omp_ok "$cxx"; then
      usable[$cxx]=0; echo "probe: $cxx cannot build OpenMP programs, skipped"
    else
      usable[$cxx]=1
    fi
  fi
  [[ ${usable[$cxx]} == 1 ]] || continue
  if [[ $opts == *-march=native* ]] && ! "$cxx" -march=native -x c++ -fsyntax-only /dev/null >/dev/null 2>&1; then
    echo "probe: $cfg not supported here, skipped"; continue
  fi
  tag=$(echo "$cfg" | tr -c 'A-Za-z0-9\n' '_')
  objs=()
  built=1
  for entry in "${isa_objects[@]}"; do
    file=${entry%%:*}
    obj="$work/${file%.cpp}_$tag.o"
    # shellcheck disable=SC2086
    if ! "$cxx" "${flags[@]}" $opts ${entry#*:} -c "$root/kernels/cpu/$file" -o "$obj" 2> "$work/build_$tag.log"; then
      built=0; break
    fi
    objs+=("$obj")
  done
  # shellcheck disable=SC2086
  if ((built == 0)) || ! "$cxx" "${flags[@]}" $opts "$src" "${objs[@]}" -o "$work/probe_$tag" 2>> "$work/build_$tag.log"; then
    echo "probe: FAILED to build with $cfg:"; cat "$work/build_$tag.log"; status=1; continue
  fi
  OMP_NUM_THREADS=1 "$work/probe_$tag" > "$work/out_$tag.txt" || { echo "probe: $cfg run failed"; status=1; continue; }
  builds=$((builds + 1))
  if [[ -z $ref ]]; then
    ref="$work/out_$tag.txt"; ref_cfg=$cfg
    echo "probe: reference $cfg ($(wc -l < "$ref") lines)"
    OMP_NUM_THREADS=3 "$work/probe_$tag" > "$work/out_${tag}_t3.txt"
    if ! diff -u "$ref" "$work/out_${tag}_t3.txt"; then
      echo "probe: FAIL: $cfg output differs between 1 and 3 OpenMP threads"; status=1
    fi
  elif diff -u "$ref" "$work/out_$tag.txt"; then
    echo "probe: $cfg identical"
  else
    echo "probe: FAIL: $cfg differs from $ref_cfg"; status=1
  fi
done

if (( builds < 2 )); then
  echo "probe: FAIL: only $builds build(s) ran; need at least two"; exit 1
fi
(( status == 0 )) && echo "probe: $builds builds, all outputs bit-identical"
exit $status
