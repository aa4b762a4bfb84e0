# Runs that would check nothing fail and say why: an empty directory,
# a --filter matching no case (run and mutants), an unknown mutant name.
include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/empty)

rcts_expect(run_empty_dir 2 "empty: no case files \\(\\*\\.json\\) in this directory" run ${OUT}/empty)
rcts_expect(mutants_empty_dir 2 "empty: no case files \\(\\*\\.json\\) in this directory" mutants ${OUT}/empty)
set(no_match "no case matches --filter 'selectve\\.\\*' \\([0-9]+ cases loaded")
rcts_expect(run_filter_no_match 2 "${no_match}" run ${CASES} --filter "selectve.*")
rcts_expect(mutants_filter_no_match 2 "${no_match}" mutants ${CASES} --filter "selectve.*")
rcts_expect(mutants_unknown_name 2 "no mutant named 'no_rng_restor'" mutants ${CASES} --only no_rng_restor)
rcts_report()
