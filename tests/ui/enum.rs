use reflector::Reflect;

#[derive(Reflect)]
pub enum Widget {
    A,
    B,
}

fn main() {}
