#if LOCKSTEP_FUZZ
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// libFuzzer's own entry point (compiler-rt, `FuzzerDriver.cpp`): parses libFuzzer's arguments
/// and runs `callback` on every input. Linked from `libclang_rt.fuzzer_no_main`, so that this
/// executable keeps its own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Hands one target to libFuzzer.
enum LibFuzzer {
    /// The target the C callback runs (it can capture nothing). Set once, before fuzzing starts.
    nonisolated(unsafe) private static var target = FuzzTarget.peer
    /// libFuzzer's argv: kept reachable, since libFuzzer may exit from inside the driver (and
    /// LeakSanitizer would report it).
    nonisolated(unsafe) private static var argv: [UnsafeMutablePointer<CChar>?] = []

    /// Names the target for the runs libFuzzer starts itself (see main.swift).
    static let targetVariable = "LOCKSTEP_FUZZ_TARGET"

    /// Runs libFuzzer with `arguments` (argv[0] first) after the target's defaults, which they override.
    static func run(_ target: FuzzTarget, arguments: [String]) -> Int32 {
        Self.target = target
        setenv(targetVariable, target.rawValue, 1)
        let all = [arguments[0]] + target.libFuzzerDefaults + arguments.dropFirst()
        argv = all.map { strdup($0) } + [nil]
        var argc = Int32(all.count)
        return argv.withUnsafeMutableBufferPointer { buffer in
            var base = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &base) { data, size in
                let bytes = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
                LibFuzzer.target.run(bytes)
                return 0
            }
        }
    }
}
#endif
