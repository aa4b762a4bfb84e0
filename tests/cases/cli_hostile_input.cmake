# Hostile input files: nesting 100k deep, numbers beyond a double,
# duplicate keys, invalid UTF-8, a directory as a config. Each is an error (exit 2)
# naming the file, the JSON path and the value, for run, explain, memory and block;
# none crashes. The files are written here (100k-deep ones are too big to commit).
include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/dir)

string(REPEAT "[" 100000 open)
string(REPEAT "]" 100000 close)
set(deep_case "{\"id\": \"x.deep\", \"description\": \"d\", \"config\": {\"model\": {\"num_layers\": ${open}${close}}}, \"expect\": {\"golden\": true}}")
file(WRITE ${OUT}/deep_array.json "${deep_case}")
file(WRITE ${OUT}/dir/zz_deep.json "${deep_case}")
file(COPY ${CASES}/full/uniform.bf16.json DESTINATION ${OUT}/dir)
string(REPEAT "{\"a\": " 100000 open)
string(REPEAT "}" 100000 close)
file(WRITE ${OUT}/deep_object.json "{\"model\": ${open}1${close}}")
file(WRITE ${OUT}/huge_number.json
     "{\"id\": \"x.huge\", \"description\": \"d\", \"config\": {\"model\": {\"hidden_dropout\": 1e800}}, \"expect\": {\"golden\": true}}")
file(WRITE ${OUT}/huge_number_config.json "{\"run\": {\"steps\": 1}, \"offload\": {\"link_latency_us\": -1e400}}")
file(WRITE ${OUT}/duplicate_key.json "{\"id\": \"x.a\", \"description\": \"d\", \"id\": \"x.b\", \"expect\": {\"golden\": true}}")
file(WRITE ${OUT}/duplicate_key_config.json "{\"model\": {\"num_layers\": 2, \"hidden_size\": 64, \"num_layers\": 3}}")
string(ASCII 255 ff)
file(WRITE ${OUT}/invalid_utf8.json "{\"id\": \"x.u\", \"description\": \"bad ${ff} byte\", \"expect\": {\"golden\": true}}")

set(deep_msg "/config/model/num_layers(/0)+ = \\[\\.\\.\\.: nested deeper than 64 levels")
rcts_expect(run_deep_array 2 "deep_array.json: ${deep_msg}" run ${OUT}/deep_array.json)
rcts_expect(explain_deep_array 2 "deep_array.json: ${deep_msg}" explain ${OUT}/deep_array.json)
rcts_expect(run_directory_names_the_file 2 "dir/zz_deep.json: ${deep_msg}" run ${OUT}/dir)
rcts_expect(memory_deep_object 2 "deep_object.json: /model(/a)+ = \\{\\.\\.\\.: nested deeper than 64 levels"
            memory --config ${OUT}/deep_object.json)
rcts_expect(run_huge_number 2
            "huge_number.json: /config/model/hidden_dropout = 1e800: number out of range of a double \\(line 1, column 77\\)"
            run ${OUT}/huge_number.json)
rcts_expect(memory_huge_number 2 "huge_number_config.json: /offload/link_latency_us = -1e400: number out of range"
            memory --config ${OUT}/huge_number_config.json)
rcts_expect(run_duplicate_key 2 "duplicate_key.json: /id: duplicate key \"id\"" run ${OUT}/duplicate_key.json)
rcts_expect(memory_duplicate_key 2 "duplicate_key_config.json: /model/num_layers: duplicate key \"num_layers\""
            memory --config ${OUT}/duplicate_key_config.json)
rcts_expect(run_invalid_utf8 2 "invalid_utf8.json: /description = '[^']*\\\\x[0-9a-f][0-9a-f][^']*': invalid JSON \\(line 1, column [0-9]+\\): .*ill-formed UTF-8"
            run ${OUT}/invalid_utf8.json)
rcts_expect(memory_config_directory 2 "dir: is a directory, not a config file" memory --config ${OUT}/dir)
rcts_expect(block_config_directory 2 "dir: is a directory, not a config file" block --config ${OUT}/dir)
rcts_report()
