//! The characters that take an emoji or text presentation selector (U+FE0F, U+FE0E): every
//! base of Unicode's `emoji-variation-sequences.txt`, Version 17.0 (Date: 2025-01-30; 371
//! sequences of each style, the same bases for both; the file's SHA-256 is
//! `bb3d09ef03f206012c7532dd52dc0a21c9efddba0135ea4cf0d9201b8b9bba7e`, as shipped in the
//! `emoji-data` 0.5.0 Python package). Generated data, not edited by hand: no maintained
//! crate publishes this list (`unicode-properties` has the Emoji properties, not the
//! sequences). To update, take the new file from the UCD's `emoji/` folder and write one
//! line per base (`'\u{XXXX}', // NAME`, the name from the file's comment), sorted; the test
//! below checks the order and the count.
//!
//! Unicode® data, © Unicode, Inc., under the Unicode License v3.

/// The bases, sorted by code point (searched with `binary_search`).
pub(super) const BASES: [char; 371] = [
    '\u{0023}',  // NUMBER SIGN
    '\u{002A}',  // ASTERISK
    '\u{0030}',  // DIGIT ZERO
    '\u{0031}',  // DIGIT ONE
    '\u{0032}',  // DIGIT TWO
    '\u{0033}',  // DIGIT THREE
    '\u{0034}',  // DIGIT FOUR
    '\u{0035}',  // DIGIT FIVE
    '\u{0036}',  // DIGIT SIX
    '\u{0037}',  // DIGIT SEVEN
    '\u{0038}',  // DIGIT EIGHT
    '\u{0039}',  // DIGIT NINE
    '\u{00A9}',  // COPYRIGHT SIGN
    '\u{00AE}',  // REGISTERED SIGN
    '\u{203C}',  // DOUBLE EXCLAMATION MARK
    '\u{2049}',  // EXCLAMATION QUESTION MARK
    '\u{2122}',  // TRADE MARK SIGN
    '\u{2139}',  // INFORMATION SOURCE
    '\u{2194}',  // LEFT RIGHT ARROW
    '\u{2195}',  // UP DOWN ARROW
    '\u{2196}',  // NORTH WEST ARROW
    '\u{2197}',  // NORTH EAST ARROW
    '\u{2198}',  // SOUTH EAST ARROW
    '\u{2199}',  // SOUTH WEST ARROW
    '\u{21A9}',  // LEFTWARDS ARROW WITH HOOK
    '\u{21AA}',  // RIGHTWARDS ARROW WITH HOOK
    '\u{231A}',  // WATCH
    '\u{231B}',  // HOURGLASS
    '\u{2328}',  // KEYBOARD
    '\u{23CF}',  // EJECT SYMBOL
    '\u{23E9}',  // BLACK RIGHT-POINTING DOUBLE TRIANGLE
    '\u{23EA}',  // BLACK LEFT-POINTING DOUBLE TRIANGLE
    '\u{23EB}',  // BLACK UP-POINTING DOUBLE TRIANGLE
    '\u{23EC}',  // BLACK DOWN-POINTING DOUBLE TRIANGLE
    '\u{23ED}',  // BLACK RIGHT-POINTING DOUBLE TRIANGLE WITH VERTICAL BAR
    '\u{23EE}',  // BLACK LEFT-POINTING DOUBLE TRIANGLE WITH VERTICAL BAR
    '\u{23EF}',  // BLACK RIGHT-POINTING TRIANGLE WITH DOUBLE VERTICAL BAR
    '\u{23F0}',  // ALARM CLOCK
    '\u{23F1}',  // STOPWATCH
    '\u{23F2}',  // TIMER CLOCK
    '\u{23F3}',  // HOURGLASS WITH FLOWING SAND
    '\u{23F8}',  // DOUBLE VERTICAL BAR
    '\u{23F9}',  // BLACK SQUARE FOR STOP
    '\u{23FA}',  // BLACK CIRCLE FOR RECORD
    '\u{24C2}',  // CIRCLED LATIN CAPITAL LETTER M
    '\u{25AA}',  // BLACK SMALL SQUARE
    '\u{25AB}',  // WHITE SMALL SQUARE
    '\u{25B6}',  // BLACK RIGHT-POINTING TRIANGLE
    '\u{25C0}',  // BLACK LEFT-POINTING TRIANGLE
    '\u{25FB}',  // WHITE MEDIUM SQUARE
    '\u{25FC}',  // BLACK MEDIUM SQUARE
    '\u{25FD}',  // WHITE MEDIUM SMALL SQUARE
    '\u{25FE}',  // BLACK MEDIUM SMALL SQUARE
    '\u{2600}',  // BLACK SUN WITH RAYS
    '\u{2601}',  // CLOUD
    '\u{2602}',  // UMBRELLA
    '\u{2603}',  // SNOWMAN
    '\u{2604}',  // COMET
    '\u{260E}',  // BLACK TELEPHONE
    '\u{2611}',  // BALLOT BOX WITH CHECK
    '\u{2614}',  // UMBRELLA WITH RAIN DROPS
    '\u{2615}',  // HOT BEVERAGE
    '\u{2618}',  // SHAMROCK
    '\u{261D}',  // WHITE UP POINTING INDEX
    '\u{2620}',  // SKULL AND CROSSBONES
    '\u{2622}',  // RADIOACTIVE SIGN
    '\u{2623}',  // BIOHAZARD SIGN
    '\u{2626}',  // ORTHODOX CROSS
    '\u{262A}',  // STAR AND CRESCENT
    '\u{262E}',  // PEACE SYMBOL
    '\u{262F}',  // YIN YANG
    '\u{2638}',  // WHEEL OF DHARMA
    '\u{2639}',  // WHITE FROWNING FACE
    '\u{263A}',  // WHITE SMILING FACE
    '\u{2640}',  // FEMALE SIGN
    '\u{2642}',  // MALE SIGN
    '\u{2648}',  // ARIES
    '\u{2649}',  // TAURUS
    '\u{264A}',  // GEMINI
    '\u{264B}',  // CANCER
    '\u{264C}',  // LEO
    '\u{264D}',  // VIRGO
    '\u{264E}',  // LIBRA
    '\u{264F}',  // SCORPIUS
    '\u{2650}',  // SAGITTARIUS
    '\u{2651}',  // CAPRICORN
    '\u{2652}',  // AQUARIUS
    '\u{2653}',  // PISCES
    '\u{265F}',  // BLACK CHESS PAWN
    '\u{2660}',  // BLACK SPADE SUIT
    '\u{2663}',  // BLACK CLUB SUIT
    '\u{2665}',  // BLACK HEART SUIT
    '\u{2666}',  // BLACK DIAMOND SUIT
    '\u{2668}',  // HOT SPRINGS
    '\u{267B}',  // BLACK UNIVERSAL RECYCLING SYMBOL
    '\u{267E}',  // PERMANENT PAPER SIGN
    '\u{267F}',  // WHEELCHAIR SYMBOL
    '\u{2692}',  // HAMMER AND PICK
    '\u{2693}',  // ANCHOR
    '\u{2694}',  // CROSSED SWORDS
    '\u{2695}',  // STAFF OF AESCULAPIUS
    '\u{2696}',  // SCALES
    '\u{2697}',  // ALEMBIC
    '\u{2699}',  // GEAR
    '\u{269B}',  // ATOM SYMBOL
    '\u{269C}',  // FLEUR-DE-LIS
    '\u{26A0}',  // WARNING SIGN
    '\u{26A1}',  // HIGH VOLTAGE SIGN
    '\u{26A7}',  // MALE WITH STROKE AND MALE AND FEMALE SIGN
    '\u{26AA}',  // MEDIUM WHITE CIRCLE
    '\u{26AB}',  // MEDIUM BLACK CIRCLE
    '\u{26B0}',  // COFFIN
    '\u{26B1}',  // FUNERAL URN
    '\u{26BD}',  // SOCCER BALL
    '\u{26BE}',  // BASEBALL
    '\u{26C4}',  // SNOWMAN WITHOUT SNOW
    '\u{26C5}',  // SUN BEHIND CLOUD
    '\u{26C8}',  // THUNDER CLOUD AND RAIN
    '\u{26CE}',  // OPHIUCHUS
    '\u{26CF}',  // PICK
    '\u{26D1}',  // HELMET WITH WHITE CROSS
    '\u{26D3}',  // CHAINS
    '\u{26D4}',  // NO ENTRY
    '\u{26E9}',  // SHINTO SHRINE
    '\u{26EA}',  // CHURCH
    '\u{26F0}',  // MOUNTAIN
    '\u{26F1}',  // UMBRELLA ON GROUND
    '\u{26F2}',  // FOUNTAIN
    '\u{26F3}',  // FLAG IN HOLE
    '\u{26F4}',  // FERRY
    '\u{26F5}',  // SAILBOAT
    '\u{26F7}',  // SKIER
    '\u{26F8}',  // ICE SKATE
    '\u{26F9}',  // PERSON WITH BALL
    '\u{26FA}',  // TENT
    '\u{26FD}',  // FUEL PUMP
    '\u{2702}',  // BLACK SCISSORS
    '\u{2705}',  // WHITE HEAVY CHECK MARK
    '\u{2708}',  // AIRPLANE
    '\u{2709}',  // ENVELOPE
    '\u{270A}',  // RAISED FIST
    '\u{270B}',  // RAISED HAND
    '\u{270C}',  // VICTORY HAND
    '\u{270D}',  // WRITING HAND
    '\u{270F}',  // PENCIL
    '\u{2712}',  // BLACK NIB
    '\u{2714}',  // HEAVY CHECK MARK
    '\u{2716}',  // HEAVY MULTIPLICATION X
    '\u{271D}',  // LATIN CROSS
    '\u{2721}',  // STAR OF DAVID
    '\u{2728}',  // SPARKLES
    '\u{2733}',  // EIGHT SPOKED ASTERISK
    '\u{2734}',  // EIGHT POINTED BLACK STAR
    '\u{2744}',  // SNOWFLAKE
    '\u{2747}',  // SPARKLE
    '\u{274C}',  // CROSS MARK
    '\u{274E}',  // NEGATIVE SQUARED CROSS MARK
    '\u{2753}',  // BLACK QUESTION MARK ORNAMENT
    '\u{2754}',  // WHITE QUESTION MARK ORNAMENT
    '\u{2755}',  // WHITE EXCLAMATION MARK ORNAMENT
    '\u{2757}',  // HEAVY EXCLAMATION MARK SYMBOL
    '\u{2763}',  // HEAVY HEART EXCLAMATION MARK ORNAMENT
    '\u{2764}',  // HEAVY BLACK HEART
    '\u{2795}',  // HEAVY PLUS SIGN
    '\u{2796}',  // HEAVY MINUS SIGN
    '\u{2797}',  // HEAVY DIVISION SIGN
    '\u{27A1}',  // BLACK RIGHTWARDS ARROW
    '\u{27B0}',  // CURLY LOOP
    '\u{27BF}',  // DOUBLE CURLY LOOP
    '\u{2934}',  // ARROW POINTING RIGHTWARDS THEN CURVING UPWARDS
    '\u{2935}',  // ARROW POINTING RIGHTWARDS THEN CURVING DOWNWARDS
    '\u{2B05}',  // LEFTWARDS BLACK ARROW
    '\u{2B06}',  // UPWARDS BLACK ARROW
    '\u{2B07}',  // DOWNWARDS BLACK ARROW
    '\u{2B1B}',  // BLACK LARGE SQUARE
    '\u{2B1C}',  // WHITE LARGE SQUARE
    '\u{2B50}',  // WHITE MEDIUM STAR
    '\u{2B55}',  // HEAVY LARGE CIRCLE
    '\u{3030}',  // WAVY DASH
    '\u{303D}',  // PART ALTERNATION MARK
    '\u{3297}',  // CIRCLED IDEOGRAPH CONGRATULATION
    '\u{3299}',  // CIRCLED IDEOGRAPH SECRET
    '\u{1F004}', // MAHJONG TILE RED DRAGON
    '\u{1F170}', // NEGATIVE SQUARED LATIN CAPITAL LETTER A
    '\u{1F171}', // NEGATIVE SQUARED LATIN CAPITAL LETTER B
    '\u{1F17E}', // NEGATIVE SQUARED LATIN CAPITAL LETTER O
    '\u{1F17F}', // NEGATIVE SQUARED LATIN CAPITAL LETTER P
    '\u{1F202}', // SQUARED KATAKANA SA
    '\u{1F21A}', // SQUARED CJK UNIFIED IDEOGRAPH-7121
    '\u{1F22F}', // SQUARED CJK UNIFIED IDEOGRAPH-6307
    '\u{1F237}', // SQUARED CJK UNIFIED IDEOGRAPH-6708
    '\u{1F30D}', // EARTH GLOBE EUROPE-AFRICA
    '\u{1F30E}', // EARTH GLOBE AMERICAS
    '\u{1F30F}', // EARTH GLOBE ASIA-AUSTRALIA
    '\u{1F315}', // FULL MOON SYMBOL
    '\u{1F31C}', // LAST QUARTER MOON WITH FACE
    '\u{1F321}', // THERMOMETER
    '\u{1F324}', // WHITE SUN WITH SMALL CLOUD
    '\u{1F325}', // WHITE SUN BEHIND CLOUD
    '\u{1F326}', // WHITE SUN BEHIND CLOUD WITH RAIN
    '\u{1F327}', // CLOUD WITH RAIN
    '\u{1F328}', // CLOUD WITH SNOW
    '\u{1F329}', // CLOUD WITH LIGHTNING
    '\u{1F32A}', // CLOUD WITH TORNADO
    '\u{1F32B}', // FOG
    '\u{1F32C}', // WIND BLOWING FACE
    '\u{1F336}', // HOT PEPPER
    '\u{1F378}', // COCKTAIL GLASS
    '\u{1F37D}', // FORK AND KNIFE WITH PLATE
    '\u{1F393}', // GRADUATION CAP
    '\u{1F396}', // MILITARY MEDAL
    '\u{1F397}', // REMINDER RIBBON
    '\u{1F399}', // STUDIO MICROPHONE
    '\u{1F39A}', // LEVEL SLIDER
    '\u{1F39B}', // CONTROL KNOBS
    '\u{1F39E}', // FILM FRAMES
    '\u{1F39F}', // ADMISSION TICKETS
    '\u{1F3A7}', // HEADPHONE
    '\u{1F3AC}', // CLAPPER BOARD
    '\u{1F3AD}', // PERFORMING ARTS
    '\u{1F3AE}', // VIDEO GAME
    '\u{1F3C2}', // SNOWBOARDER
    '\u{1F3C4}', // SURFER
    '\u{1F3C6}', // TROPHY
    '\u{1F3CA}', // SWIMMER
    '\u{1F3CB}', // WEIGHT LIFTER
    '\u{1F3CC}', // GOLFER
    '\u{1F3CD}', // RACING MOTORCYCLE
    '\u{1F3CE}', // RACING CAR
    '\u{1F3D4}', // SNOW CAPPED MOUNTAIN
    '\u{1F3D5}', // CAMPING
    '\u{1F3D6}', // BEACH WITH UMBRELLA
    '\u{1F3D7}', // BUILDING CONSTRUCTION
    '\u{1F3D8}', // HOUSE BUILDINGS
    '\u{1F3D9}', // CITYSCAPE
    '\u{1F3DA}', // DERELICT HOUSE BUILDING
    '\u{1F3DB}', // CLASSICAL BUILDING
    '\u{1F3DC}', // DESERT
    '\u{1F3DD}', // DESERT ISLAND
    '\u{1F3DE}', // NATIONAL PARK
    '\u{1F3DF}', // STADIUM
    '\u{1F3E0}', // HOUSE BUILDING
    '\u{1F3ED}', // FACTORY
    '\u{1F3F3}', // WAVING WHITE FLAG
    '\u{1F3F5}', // ROSETTE
    '\u{1F3F7}', // LABEL
    '\u{1F408}', // CAT
    '\u{1F415}', // DOG
    '\u{1F41F}', // FISH
    '\u{1F426}', // BIRD
    '\u{1F43F}', // CHIPMUNK
    '\u{1F441}', // EYE
    '\u{1F442}', // EAR
    '\u{1F446}', // WHITE UP POINTING BACKHAND INDEX
    '\u{1F447}', // WHITE DOWN POINTING BACKHAND INDEX
    '\u{1F448}', // WHITE LEFT POINTING BACKHAND INDEX
    '\u{1F449}', // WHITE RIGHT POINTING BACKHAND INDEX
    '\u{1F44D}', // THUMBS UP SIGN
    '\u{1F44E}', // THUMBS DOWN SIGN
    '\u{1F453}', // EYEGLASSES
    '\u{1F46A}', // FAMILY
    '\u{1F47D}', // EXTRATERRESTRIAL ALIEN
    '\u{1F4A3}', // BOMB
    '\u{1F4B0}', // MONEY BAG
    '\u{1F4B3}', // CREDIT CARD
    '\u{1F4BB}', // PERSONAL COMPUTER
    '\u{1F4BF}', // OPTICAL DISC
    '\u{1F4CB}', // CLIPBOARD
    '\u{1F4DA}', // BOOKS
    '\u{1F4DF}', // PAGER
    '\u{1F4E4}', // OUTBOX TRAY
    '\u{1F4E5}', // INBOX TRAY
    '\u{1F4E6}', // PACKAGE
    '\u{1F4EA}', // CLOSED MAILBOX WITH LOWERED FLAG
    '\u{1F4EB}', // CLOSED MAILBOX WITH RAISED FLAG
    '\u{1F4EC}', // OPEN MAILBOX WITH RAISED FLAG
    '\u{1F4ED}', // OPEN MAILBOX WITH LOWERED FLAG
    '\u{1F4F7}', // CAMERA
    '\u{1F4F9}', // VIDEO CAMERA
    '\u{1F4FA}', // TELEVISION
    '\u{1F4FB}', // RADIO
    '\u{1F4FD}', // FILM PROJECTOR
    '\u{1F508}', // SPEAKER
    '\u{1F50D}', // LEFT-POINTING MAGNIFYING GLASS
    '\u{1F512}', // LOCK
    '\u{1F513}', // OPEN LOCK
    '\u{1F549}', // OM SYMBOL
    '\u{1F54A}', // DOVE OF PEACE
    '\u{1F550}', // CLOCK FACE ONE OCLOCK
    '\u{1F551}', // CLOCK FACE TWO OCLOCK
    '\u{1F552}', // CLOCK FACE THREE OCLOCK
    '\u{1F553}', // CLOCK FACE FOUR OCLOCK
    '\u{1F554}', // CLOCK FACE FIVE OCLOCK
    '\u{1F555}', // CLOCK FACE SIX OCLOCK
    '\u{1F556}', // CLOCK FACE SEVEN OCLOCK
    '\u{1F557}', // CLOCK FACE EIGHT OCLOCK
    '\u{1F558}', // CLOCK FACE NINE OCLOCK
    '\u{1F559}', // CLOCK FACE TEN OCLOCK
    '\u{1F55A}', // CLOCK FACE ELEVEN OCLOCK
    '\u{1F55B}', // CLOCK FACE TWELVE OCLOCK
    '\u{1F55C}', // CLOCK FACE ONE-THIRTY
    '\u{1F55D}', // CLOCK FACE TWO-THIRTY
    '\u{1F55E}', // CLOCK FACE THREE-THIRTY
    '\u{1F55F}', // CLOCK FACE FOUR-THIRTY
    '\u{1F560}', // CLOCK FACE FIVE-THIRTY
    '\u{1F561}', // CLOCK FACE SIX-THIRTY
    '\u{1F562}', // CLOCK FACE SEVEN-THIRTY
    '\u{1F563}', // CLOCK FACE EIGHT-THIRTY
    '\u{1F564}', // CLOCK FACE NINE-THIRTY
    '\u{1F565}', // CLOCK FACE TEN-THIRTY
    '\u{1F566}', // CLOCK FACE ELEVEN-THIRTY
    '\u{1F567}', // CLOCK FACE TWELVE-THIRTY
    '\u{1F56F}', // CANDLE
    '\u{1F570}', // MANTELPIECE CLOCK
    '\u{1F573}', // HOLE
    '\u{1F574}', // MAN IN BUSINESS SUIT LEVITATING
    '\u{1F575}', // SLEUTH OR SPY
    '\u{1F576}', // DARK SUNGLASSES
    '\u{1F577}', // SPIDER
    '\u{1F578}', // SPIDER WEB
    '\u{1F579}', // JOYSTICK
    '\u{1F587}', // LINKED PAPERCLIPS
    '\u{1F58A}', // LOWER LEFT BALLPOINT PEN
    '\u{1F58B}', // LOWER LEFT FOUNTAIN PEN
    '\u{1F58C}', // LOWER LEFT PAINTBRUSH
    '\u{1F58D}', // LOWER LEFT CRAYON
    '\u{1F590}', // RAISED HAND WITH FINGERS SPLAYED
    '\u{1F5A5}', // DESKTOP COMPUTER
    '\u{1F5A8}', // PRINTER
    '\u{1F5B1}', // THREE BUTTON MOUSE
    '\u{1F5B2}', // TRACKBALL
    '\u{1F5BC}', // FRAME WITH PICTURE
    '\u{1F5C2}', // CARD INDEX DIVIDERS
    '\u{1F5C3}', // CARD FILE BOX
    '\u{1F5C4}', // FILE CABINET
    '\u{1F5D1}', // WASTEBASKET
    '\u{1F5D2}', // SPIRAL NOTE PAD
    '\u{1F5D3}', // SPIRAL CALENDAR PAD
    '\u{1F5DC}', // COMPRESSION
    '\u{1F5DD}', // OLD KEY
    '\u{1F5DE}', // ROLLED-UP NEWSPAPER
    '\u{1F5E1}', // DAGGER KNIFE
    '\u{1F5E3}', // SPEAKING HEAD IN SILHOUETTE
    '\u{1F5E8}', // LEFT SPEECH BUBBLE
    '\u{1F5EF}', // RIGHT ANGER BUBBLE
    '\u{1F5F3}', // BALLOT BOX WITH BALLOT
    '\u{1F5FA}', // WORLD MAP
    '\u{1F610}', // NEUTRAL FACE
    '\u{1F687}', // METRO
    '\u{1F68D}', // ONCOMING BUS
    '\u{1F691}', // AMBULANCE
    '\u{1F694}', // ONCOMING POLICE CAR
    '\u{1F698}', // ONCOMING AUTOMOBILE
    '\u{1F6AD}', // NO SMOKING SYMBOL
    '\u{1F6B2}', // BICYCLE
    '\u{1F6B9}', // MENS SYMBOL
    '\u{1F6BA}', // WOMENS SYMBOL
    '\u{1F6BC}', // BABY SYMBOL
    '\u{1F6CB}', // COUCH AND LAMP
    '\u{1F6CD}', // SHOPPING BAGS
    '\u{1F6CE}', // BELLHOP BELL
    '\u{1F6CF}', // BED
    '\u{1F6E0}', // HAMMER AND WRENCH
    '\u{1F6E1}', // SHIELD
    '\u{1F6E2}', // OIL DRUM
    '\u{1F6E3}', // MOTORWAY
    '\u{1F6E4}', // RAILWAY TRACK
    '\u{1F6E5}', // MOTOR BOAT
    '\u{1F6E9}', // SMALL AIRPLANE
    '\u{1F6F0}', // SATELLITE
    '\u{1F6F3}', // PASSENGER SHIP
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bases_are_sorted_and_all_there() {
        assert!(BASES.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
        assert_eq!(
            BASES.len(),
            371,
            "the file's 'Total sequences' for each style"
        );
    }
}
