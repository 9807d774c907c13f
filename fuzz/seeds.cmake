# Writes the seed corpus of one fuzz target into a folder: the one list of
# seeds, used by the short ctest runs (fuzz/CMakeLists.txt) and by the long
# ones (scripts/fuzz).
#
#   cmake -DTARGET=<target> -DSRC=<source folder> -DOUT=<seed folder>
#         [-DRUN=<folder>] -P fuzz/seeds.cmake
#
# OUT is emptied, then filled with the committed fixtures and corrupt-corpus
# files of the target's format (tests/corrupt/), its hand-made seeds
# (fuzz/seeds/FUZZER/) and its past findings (fuzz/regressions/FUZZER/), each
# named by the SHA-1 of its bytes. The pickle target gets the data.pkl of every
# torch.save zip, the npy target the members of every .npz. RUN, when given,
# is emptied and made anew with an empty corpus/ and tmp/ inside (a fresh
# run: libFuzzer's corpus, and the scratch folder of the targets that write
# their input to a file).
cmake_minimum_required(VERSION 3.18)
foreach(v FUZZER SRC OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "seeds.cmake: -D${v}=... is required")
  endif()
endforeach()

set(F ${SRC}/fixtures)
set(C ${SRC}/tests/corrupt)
set(torch_zips ${F}/torch/*.bin ${F}/torch/*.pt ${F}/torch/sharded/*.bin ${C}/torch/*)
set(npz_files ${F}/npz/*.npz ${C}/npz/* ${C}/npy/*)
set(extract "")
if(FUZZER STREQUAL "safetensors")
  set(globs ${F}/*.safetensors ${F}/*/*.safetensors ${F}/*/*/*.safetensors ${C}/safetensors/* ${C}/fixture/*)
elseif(FUZZER STREQUAL "shard_index")
  set(globs ${F}/torch/sharded/*.json ${C}/shard_index/*/*.json)
elseif(FUZZER STREQUAL "config")
  set(globs ${F}/tiny/config.json ${F}/diag/tiny_pre/config.json ${C}/config/*/config.json)
elseif(FUZZER STREQUAL "zip")
  set(globs ${npz_files} ${torch_zips} ${C}/zip/*)
elseif(FUZZER STREQUAL "torch")
  set(globs ${torch_zips} ${C}/zip/*)
elseif(FUZZER STREQUAL "npy")
  set(globs ${F}/npz/tiny_tanh_npy/*.npy)
  # not tests/corrupt/npz/: its zip bomb would unpack to 4 GiB
  set(extract ${F}/npz/*.npz ${C}/npy/*)
  set(extract_member "*.npy")
elseif(FUZZER STREQUAL "npz")
  set(globs ${npz_files})
elseif(FUZZER STREQUAL "gguf")
  set(globs ${F}/formats2/*.gguf ${C}/gguf/*)
elseif(FUZZER STREQUAL "llmc")
  set(globs ${F}/formats2/*llmc*.bin ${C}/llmc/*)
elseif(FUZZER STREQUAL "llmc_state")
  set(globs ${F}/llmc/*.bin ${C}/llmc_state/*.bin ${C}/llmc_state/*/state.bin)
elseif(FUZZER STREQUAL "pickle")
  set(globs "")
  set(extract ${torch_zips})
  set(extract_member "data.pkl") # at any depth: <root>/data.pkl
elseif(FUZZER STREQUAL "bpe")
  # the small vocabulary's files (OpenAI's full ones make each run 40x slower) and fuzz/seeds/bpe/
  set(globs ${F}/tokenizer/small_hf/* ${F}/tokenizer/small_json/* ${F}/tokenizer/small_pairs/*)
elseif(FUZZER STREQUAL "tokenizer")
  set(globs "") # only the hand-made seeds: texts and byte strings
elseif(FUZZER STREQUAL "genverify")
  set(globs ${F}/decode/gen/*.safetensors)
elseif(FUZZER STREQUAL "fixture_names")
  set(globs "") # only the hand-made seeds: this target's input is a list of names
else()
  message(FATAL_ERROR "seeds.cmake: unknown fuzz target '${FUZZER}'")
endif()
list(APPEND globs ${SRC}/fuzz/seeds/${FUZZER}/* ${SRC}/fuzz/regressions/${FUZZER}/*)

file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
if(DEFINED RUN)
  file(REMOVE_RECURSE ${RUN})
  file(MAKE_DIRECTORY ${RUN}/corpus ${RUN}/tmp)
endif()

function(add_seed path)
  file(SHA1 ${path} h)
  configure_file(${path} ${OUT}/seed-${h} COPYONLY)
endfunction()

set(n 0)
file(GLOB seeds LIST_DIRECTORIES false ${globs})
foreach(s ${seeds})
  add_seed(${s})
  math(EXPR n "${n} + 1")
endforeach()

# Members of archives (data.pkl, .npy): unpacked one archive at a time with
# cmake's own tar; an archive it cannot read (a corrupt one) gives nothing.
if(extract)
  set(tmp ${OUT}.unpack)
  file(GLOB archives LIST_DIRECTORIES false ${extract})
  foreach(a ${archives})
    file(REMOVE_RECURSE ${tmp})
    file(MAKE_DIRECTORY ${tmp})
    execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf ${a} WORKING_DIRECTORY ${tmp}
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    file(GLOB_RECURSE members LIST_DIRECTORIES false ${tmp}/${extract_member})
    foreach(m ${members})
      add_seed(${m})
      math(EXPR n "${n} + 1")
    endforeach()
  endforeach()
  file(REMOVE_RECURSE ${tmp})
endif()

if(n EQUAL 0)
  message(FATAL_ERROR "seeds.cmake: no seeds for '${FUZZER}' under ${SRC}")
endif()
message(STATUS "${FUZZER}: ${n} seeds in ${OUT}")
