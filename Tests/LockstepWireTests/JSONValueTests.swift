import Foundation
import Testing

@testable import LockstepPlayerProtocol

/// `JSONValue` stands in for `JSONSerialization` where the agent must look at a line before
/// knowing its type (mpv's values are tested in `MPVValueTests`).
@Suite struct JSONValueTests {
    @Test func aLinesObjectDecodesEachKindOfValueToItsCase() throws {
        let line = #"{"n":null,"t":true,"i":-3,"big":9223372036854775808,"d":1.5,"s":"a\"b","a":[1,"x"],"o":{"k":false}}"#
        let object = try #require(JSONValue.parsedObject(line.utf8))
        #expect(object["n"] == .null)
        #expect(object["t"] == .bool(true))
        #expect(object["i"] == .int(-3))
        #expect(object["big"] == .double(9_223_372_036_854_775_808))
        #expect(object["d"] == .double(1.5))
        #expect(object["s"] == .string("a\"b"))
        #expect(object["a"] == .array([.int(1), .string("x")]))
        #expect(object["o"] == .object(["k": .bool(false)]))
    }

    @Test func aValueEncodesToJSONThatDecodesToTheSameValue() throws {
        let value = JSONValue.object(["a": .array([.null, .bool(false), .int(.min), .double(-0.25), .string("é\n")])])
        let again = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
        #expect(again == value)
    }

    @Test(arguments: ["[1]", "1", "\"x\"", "{", "{\"a\":1e400}", "not json", ""])
    func whatIsNotOneRepresentableObjectGivesNil(line: String) {
        #expect(JSONValue.parsedObject(line.utf8) == nil)
    }
}
