// LockstepFuzz: the decoders that take hostile input, as libFuzzer targets.
//
//     LockstepFuzz list                        the targets
//     LockstepFuzz seeds DIR                   writes the seed corpus, DIR/TARGET/NAME, and DIR/TARGET.dict if any
//     LockstepFuzz run TARGET PATH...          runs files (or every file in directories) through TARGET
//     LockstepFuzz fuzz TARGET [libFuzzer arguments and corpus directories]
//     LOCKSTEP_FUZZ_TARGET=TARGET LockstepFuzz [libFuzzer arguments]   (how libFuzzer reruns itself)
//
// `fuzz` exists only in the fuzz build (`tools/fuzz` builds with -DLOCKSTEP_FUZZ, sanitizer coverage
// and AddressSanitizer, and links libFuzzer without its `main`; this `main` hands over to
// `LLVMFuzzerRunDriver`). A plain `swift build` gives the rest: `run` replays a crashing input
// with an ordinary backtrace. Every target traps (fatalError) when a property fails, which is
// what libFuzzer catches.

import Foundation

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

func usage() -> Never {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
    printError("""
        usage: LockstepFuzz list
               LockstepFuzz seeds DIR
               LockstepFuzz run (\(names)) PATH...
               LockstepFuzz fuzz (\(names)) [libFuzzer arguments] [CORPUS_DIR...]
        """)
    exit(2)
}

let arguments = CommandLine.arguments
let commands: Set = ["list", "seeds", "run", "fuzz"]

#if LOCKSTEP_FUZZ
// libFuzzer runs this executable again for -minimize_crash, -fork and -jobs, with its own
// arguments only: `fuzz` leaves the target in the environment for those runs.
if let name = ProcessInfo.processInfo.environment[LibFuzzer.targetVariable], let target = FuzzTarget(rawValue: name),
    !commands.contains(arguments.dropFirst().first ?? "") {
    exit(LibFuzzer.run(target, arguments: arguments))
}
#endif

guard arguments.count >= 2, commands.contains(arguments[1]) else { usage() }

switch arguments[1] {
case "list":
    for target in FuzzTarget.allCases { print("\(target.rawValue)\t\(target.summary)") }

case "seeds":
    guard arguments.count == 3 else { usage() }
    do {
        let count = try Corpus.write(to: arguments[2])
        print("wrote \(count) seeds to \(arguments[2])")
    } catch {
        printError("LockstepFuzz: \(error)")
        exit(1)
    }

case "run":
    guard arguments.count >= 4, let target = FuzzTarget(rawValue: arguments[2]) else { usage() }
    do {
        let files = try Corpus.files(in: Array(arguments.dropFirst(3)))
        for file in files { target.run(try Corpus.read(file)) }
        print("\(target.rawValue): \(files.count) inputs, no failure")
    } catch {
        printError("LockstepFuzz: \(error)")
        exit(1)
    }

case "fuzz":
    guard arguments.count >= 3, let target = FuzzTarget(rawValue: arguments[2]) else { usage() }
    #if LOCKSTEP_FUZZ
    exit(LibFuzzer.run(target, arguments: [arguments[0]] + arguments.dropFirst(3)))
    #else
    printError("LockstepFuzz: this build has no libFuzzer; use tools/fuzz")
    exit(2)
    #endif

default:
    usage()
}
